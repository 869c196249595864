// An OTLP/HTTP trace receiver for tests/interop/run_otlp.sh: decodes each POST /v1/traces
// body with OpenTelemetry's own generated protobuf code (@opentelemetry/otlp-transformer,
// pinned in package.json; generated from the official opentelemetry-proto), so Sluice's
// encoding is checked against the specification's schema, not against itself.
//   node otlp_receiver.mjs OUT_FILE   prints "listening on PORT", appends one JSON line per
//   span to OUT_FILE: {traceId, spanId, parentSpanId (hex), name, kind, start, end (unix ns as
//   strings), attributes {key: value}, events [names], status {code, message}, service}.
import { createServer } from 'node:http';
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const Request = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const out = process.argv[2];

const value = (any) => any.stringValue ?? any.intValue ?? any.doubleValue ?? any.boolValue ?? null;
const attributes = (list) => Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/x-protobuf') {
      res.writeHead(400).end();
      return;
    }
    let decoded;
    try {
      decoded = Request.toObject(Request.decode(Buffer.concat(chunks)), { longs: String, bytes: String, enums: Number, defaults: false });
    } catch (e) {
      appendFileSync(out, JSON.stringify({ decodeError: String(e) }) + '\n');
      res.writeHead(400).end();
      return;
    }
    const hex = (b64) => (b64 ? Buffer.from(b64, 'base64').toString('hex') : '');
    for (const rs of decoded.resourceSpans ?? []) {
      const service = attributes(rs.resource?.attributes)['service.name'];
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          appendFileSync(out, JSON.stringify({
            service, scope: ss.scope?.name, traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId),
            name: s.name, kind: s.kind, start: s.startTimeUnixNano, end: s.endTimeUnixNano,
            attributes: attributes(s.attributes), events: (s.events ?? []).map((e) => e.name),
            status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
          }) + '\n');
        }
      }
    }
    res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
  });
});
server.listen(0, '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
