# Shell helpers of the HTTP benchmarks (run_bench.sh, run_auth_bench.sh); sourced, with RUN
# set to the run's scratch directory.
port_free() {  # port: refuse to measure whatever else already answers there
  if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1/"; then
    echo "bench: port $1 is already in use; set SLUICE_PORT/NGINX_PORT" >&2
    exit 1
  fi
}
alive() {  # pid name
  kill -0 "$1" 2> /dev/null || { echo "bench: $2 exited; see $RUN" >&2; exit 1; }
}

wait_http() {  # url
  for _ in $(seq 1 100); do
    curl -fs -o /dev/null "$1" && return 0
    sleep 0.1
  done
  echo "bench: $1 did not answer" >&2
  exit 1
}

# wrk's "Requests/sec" and the 50%/99% latencies in milliseconds.
parse_wrk() {  # file
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec:/ { rate = $2 }
    /^ +50%/ { p50 = ms($2) }
    /^ +99%/ { p99 = ms($2) }
    /Non-2xx/ { bad = $NF }
    END { printf "%s %.3f %.3f %s\n", rate, p50, p99, (bad == "" ? 0 : bad) }' "$1"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

