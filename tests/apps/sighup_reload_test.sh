#!/usr/bin/env bash
# `sluice run` with API keys, end to end: the real binary, a key file, one keep-alive
# connection held open across two SIGHUPs. Checks that the key in use works, that a reload
# replacing it answers 401 to the old key and 200 to the new one on the same connection
# (nothing dropped), that a broken file keeps the previous keys (and says so on stderr), and
# that the server still drains cleanly on SIGTERM.
#   tests/apps/sighup_reload_test.sh SLUICE_BINARY
set -euo pipefail
SLUICE=$1
DIR=$(mktemp -d /tmp/sluice-sighup.XXXXXX)
PID=""
cleanup() {
  [[ -n "$PID" ]] && kill "$PID" 2> /dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
fail() { echo "sighup_reload_test: $*" >&2; echo "--- server log" >&2; cat "$DIR/log" >&2 || true; exit 1; }

OLD=$("$SLUICE" keys new)
NEW=$("$SLUICE" keys new)
key() { sed -n 's/^key:  //p' <<< "$1"; }
hash() { sed -n 's/^hash: //p' <<< "$1"; }
printf 'keys:\n  - {id: old, hash: "%s", scopes: [infer]}\n' "$(hash "$OLD")" > "$DIR/keys.yaml"
cat > "$DIR/p.yaml" <<YAML
name: sighup
sources:
  - name: api
    kind: http
    config: {listen: "127.0.0.1:0", auth: {keys_file: keys.yaml}}
nodes:
  - {name: answer, kind: template, config: {text: hello}}
edges:
  - {from: api, to: answer}
YAML
"$SLUICE" run "$DIR/p.yaml" 2> "$DIR/log" &
PID=$!
PORT=""
for _ in $(seq 1 100); do
  PORT=$(sed -n 's|.*serving on http://127.0.0.1:\([0-9]*\).*|\1|p' "$DIR/log")
  [[ -n "$PORT" ]] && break
  kill -0 "$PID" 2> /dev/null || fail "sluice run exited"
  sleep 0.1
done
[[ -n "$PORT" ]] || fail "no 'serving on' line"

exec 3<> "/dev/tcp/127.0.0.1/$PORT"
# One GET /v1/models on the held connection; prints the status code.
status_with() {  # key
  printf 'GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n' "$1" >&3
  local line status length=0
  IFS= read -r -t 5 line <&3 || fail "no response"
  status=$(cut -d' ' -f2 <<< "$line")
  while IFS= read -r -t 5 line <&3; do
    line=${line%$'\r'}
    [[ -z "$line" ]] && break
    if [[ ${line,,} == content-length:* ]]; then length=${line#*: }; fi
  done
  [[ $length -gt 0 ]] && head -c "$length" <&3 > /dev/null
  echo "$status"
}
wait_log() {  # pattern
  for _ in $(seq 1 50); do grep -q "$1" "$DIR/log" && return 0; sleep 0.1; done
  fail "the log never said '$1'"
}

[[ $(status_with "$(key "$OLD")") == 200 ]] || fail "the old key was refused before any reload"
[[ $(status_with "$(key "$NEW")") == 401 ]] || fail "the new key was accepted before the reload"

printf 'keys:\n  - {id: new, hash: "%s", scopes: [infer]}\n' "$(hash "$NEW")" > "$DIR/keys.yaml"
kill -HUP "$PID"
wait_log "source 'api' reloaded its API keys"
[[ $(status_with "$(key "$OLD")") == 401 ]] || fail "the old key still works after the reload"
[[ $(status_with "$(key "$NEW")") == 200 ]] || fail "the new key does not work after the reload"

printf 'keys:\n  - {id: broken, hash: "sha256:00", scopes: [infer]}\n' > "$DIR/keys.yaml"
kill -HUP "$PID"
wait_log "keeps its previous API keys: .*keys.yaml:2:"
[[ $(status_with "$(key "$NEW")") == 200 ]] || fail "a broken file replaced the keys"
exec 3>&-

kill -TERM "$PID"
wait "$PID" || fail "sluice run did not drain cleanly (exit $?)"
PID=""
echo "sighup_reload_test: ok"
