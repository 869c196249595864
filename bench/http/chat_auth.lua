-- wrk script: chat.lua's request with an API key (SLUICE_BENCH_KEY) as OpenAI clients send it.
wrk.method = "POST"
wrk.body = '{"model":"sluice","messages":[{"role":"user","content":"hi"}]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("SLUICE_BENCH_KEY")
