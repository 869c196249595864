-- wrk script: a non-streaming OpenAI chat completion per request (keep-alive).
wrk.method = "POST"
wrk.body = '{"model":"sluice","messages":[{"role":"user","content":"hi"}]}'
wrk.headers["Content-Type"] = "application/json"
