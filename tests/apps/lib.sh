# Shell helpers shared by the end-to-end scripts (tests/apps/*.sh, bench/*/run_*.sh); sourced.
# The sourcing script defines fail MESSAGE (print, clean up, exit non-zero) before calling them.

# need_tools WHO TOOL...: exits with "WHO: TOOL is missing (scripts/setup)" unless each is on PATH.
need_tools() {
  local who=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" > /dev/null || { echo "$who: $tool is missing (scripts/setup)" >&2; exit 1; }
  done
}

# scratch_dir NAME: a fresh folder /tmp/sluice-NAME.XXXXXX (the X's are mktemp's template) in
# $DIR, and an EXIT trap that SIGKILLs every background job of the script (servers, brokers:
# nothing must outlive it) and removes the folder; KEEP_SCRATCH=1 keeps it, for reading logs.
scratch_dir() {
  DIR=$(mktemp -d "/tmp/sluice-$1.XXXXXX")
  trap _scratch_cleanup EXIT
}
_scratch_cleanup() {
  for pid in $(jobs -p); do kill -9 "$pid" 2> /dev/null || true; done
  wait 2> /dev/null || true
  if [[ -n ${KEEP_SCRATCH:-} ]]; then echo "logs kept in $DIR" >&2; else rm -rf "$DIR"; fi
}

# wait_line FILE PATTERN PID WHAT: waits up to 15 s for a line matching PATTERN in FILE while
# PID lives, and prints it; fails when PID exits first or the time runs out.
wait_line() {
  local line
  for _ in $(seq 1 150); do
    line=$(grep -m1 -e "$2" "$1" 2> /dev/null || true)
    [[ -n "$line" ]] && { echo "$line"; return 0; }
    kill -0 "$3" 2> /dev/null || fail "$4 exited before saying '$2'"
    sleep 0.1
  done
  fail "$4 never said '$2'"
}

# metric HOST:PORT SERIES [LABEL]: the value of the first /metrics line containing SERIES (and
# LABEL when given), 0 when the server does not answer or has no such line.
metric() {
  local r
  r=$(curl -s --max-time 5 "http://$1/metrics" | grep -F -- "$2" | grep -F -- "${3:-}" | head -1 | awk '{print $2}')
  echo "${r:-0}"
}

# restartable_port: a free loopback port below the kernel's ephemeral range, for a server the
# test kills and starts again on the same port (as tests/nodes/cache/redis_server.h does, and
# why: a port in the ephemeral range may be taken as some connection's source port while the
# server is down, and the restart then cannot bind it).
restartable_port() {
  python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    port = random.randrange(10000, max(11000, low))
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
PY
}
