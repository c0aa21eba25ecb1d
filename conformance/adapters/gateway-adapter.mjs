#!/usr/bin/env node
// A small cascade-conformance adapter in another language, plain Node (no npm packages): it shows
// that the exec: protocol is language-neutral and is the template docs/adapters.md walks through.
// It implements three operations over small JS implementations:
//
//   ls.decode_request                four request messages, a schema-less protobuf reader and a
//                                    field table taken from wire.md section 2
//   engine.parse_generator_metadata  usage of a GetCascadeTrajectoryGeneratorMetadataResponse
//   engine.store_offsets             a tiny in-memory conversation pool
//
//   cascade-conformance run --target "exec:node conformance/adapters/gateway-adapter.mjs"
//
// Flags re-introduce known defects, for the kit's meta-tests (tests/conformance/targets/test_node_adapter.py):
//   --drop-unknown         the decoder forgets unknown fields              (WIRE-2 fails)
//   --null-without-usage   parsing answers null when no record has usage  (OFF-1 fails)
//   --zero-unknown-offset  the pool stores an unknown offset as 0          (OFF-3 fails)
//
// stdout carries the protocol only: one JSON answer per request line. Logs go to stderr.
import { createInterface } from "node:readline";

const FLAGS = ["--drop-unknown", "--null-without-usage", "--zero-unknown-offset"];
const given = process.argv.slice(2);
for (const flag of given) {
  if (!FLAGS.includes(flag)) {
    console.error(`gateway-adapter: unknown flag ${flag}; known: ${FLAGS.join(" ")}`);
    process.exit(2);
  }
}
const DROP_UNKNOWN = given.includes("--drop-unknown");
const NULL_WITHOUT_USAGE = given.includes("--null-without-usage");
const ZERO_UNKNOWN_OFFSET = given.includes("--zero-unknown-offset");

// ------------------------------------------------------------------ protobuf wire format

const WIRE_TYPES = { 0: "varint", 1: "fixed64", 2: "len", 5: "fixed32" };

function readVarint(buf, pos) {
  let value = 0n, shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error("truncated varint");
    const byte = buf[pos++];
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value, pos];
    shift += 7n;
    if (shift > 63n) throw new Error("varint too long");
  }
}

// The fields of one message, in wire order: {number, wireType, value}; value is a BigInt for a
// varint and a Uint8Array otherwise. Throws on bytes that are not a protobuf message.
function* fieldsOf(buf) {
  let pos = 0;
  while (pos < buf.length) {
    let key, value;
    [key, pos] = readVarint(buf, pos);
    const number = Number(key >> 3n), wireType = Number(key & 7n);
    if (number === 0) throw new Error("field number 0");
    if (wireType === 0) {
      [value, pos] = readVarint(buf, pos);
    } else if (wireType === 2) {
      let length;
      [length, pos] = readVarint(buf, pos);
      const end = pos + Number(length);
      if (end > buf.length) throw new Error("length past the end");
      value = buf.subarray(pos, end);
      pos = end;
    } else if (wireType === 1 || wireType === 5) {
      const size = wireType === 1 ? 8 : 4;
      if (pos + size > buf.length) throw new Error("truncated fixed field");
      value = buf.subarray(pos, pos + size);
      pos += size;
    } else {
      throw new Error(`unsupported wire type ${wireType}`);
    }
    yield { number, wireType, value };
  }
}

// Every occurrence of an embedded message field, in order (protobuf merges them).
function* submessages(buf, number) {
  for (const f of fieldsOf(buf)) if (f.number === number && f.wireType === 2) yield f.value;
}

function asJsonNumber(big) {
  return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString();
}

// ------------------------------------------------------------------ ls.decode_request

const STRING = "string", UINT = "uint";
const TABLE = {
  GetCascadeTrajectorySteps: { 1: ["cascade_id", STRING], 2: ["step_offset", UINT] },
  GetCascadeTrajectoryGeneratorMetadata: { 1: ["cascade_id", STRING], 2: ["generator_metadata_offset", UINT] },
  GetCascadeTrajectory: { 1: ["cascade_id", STRING] },
  AddTrackedWorkspace: { 1: ["workspace", STRING] },
};
// ignoreBOM keeps a leading U+FEFF: by default TextDecoder silently strips it (the suite caught that).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function decodeRequest(method, buf) {
  const table = TABLE[method];
  if (!table) return { rejected: `this adapter cannot decode ${method}` };
  const fields = {}, unknown = [];
  try {
    for (const { number, wireType, value } of fieldsOf(buf)) {
      const known = table[number];
      const expected = known && (known[1] === STRING ? 2 : 0);
      if (known && expected === wireType) {
        if (known[1] === STRING) { if (value.length) fields[known[0]] = utf8.decode(value); }
        else if (value !== 0n) fields[known[0]] = asJsonNumber(value & 0xffffffffn);
      } else if (!DROP_UNKNOWN) {
        unknown.push({
          path: "<root>", number, wire_type: WIRE_TYPES[wireType],
          value: wireType === 0 ? asJsonNumber(value) : { hex: Buffer.from(value).toString("hex") },
        });
      }
    }
  } catch (err) {
    return { rejected: `proto: cannot parse invalid wire-format data: ${err.message}` };
  }
  return { fields, unknown };
}

// ------------------------------------------------------------------ engine.parse_generator_metadata

// Field numbers from fakels/proto/exa: GetCascadeTrajectoryGeneratorMetadataResponse.generator_metadata = 1
// (repeated CortexStepGeneratorMetadata) -> chat_model = 1 (ChatModelMetadata) -> usage = 4
// (ModelUsageStats). ChatModelMetadata.model_uid = 15 is not needed for usage.
const RECORDS = 1, CHAT_MODEL = 1, USAGE = 4;
const FIGURES = { 2: "input_tokens", 3: "output_tokens", 4: "cache_write_tokens", 5: "cache_read_tokens" };

// One record's four figures (0 when absent; the last occurrence wins, as protobuf merges).
function figuresOf(record) {
  const figures = { input_tokens: 0n, output_tokens: 0n, cache_write_tokens: 0n, cache_read_tokens: 0n };
  for (const chatModel of submessages(record, CHAT_MODEL)) {
    for (const usage of submessages(chatModel, USAGE)) {
      for (const f of fieldsOf(usage)) if (FIGURES[f.number] && f.wireType === 0) figures[FIGURES[f.number]] = f.value;
    }
  }
  return figures;
}

// null only when there are no records; every record counts toward entry_count, usage or not; the
// figures sum the records with a non-zero figure, and has_usage says whether there was one.
function parseGeneratorMetadata(buf) {
  const sums = { input_tokens: 0n, output_tokens: 0n, cache_write_tokens: 0n, cache_read_tokens: 0n };
  let count = 0, hasUsage = false;
  for (const record of submessages(buf, RECORDS)) {
    count += 1;
    const figures = figuresOf(record);
    if (Object.values(figures).every((v) => v === 0n)) continue;
    hasUsage = true;
    for (const name of Object.keys(sums)) sums[name] += figures[name];
  }
  if (count === 0) return null;
  if (NULL_WITHOUT_USAGE && !hasUsage) return null; // the seed defect: the record count is lost
  // Sums beyond 2^53 lose precision as JSON numbers; the kit's cases stay far below.
  const usage = Object.fromEntries(Object.entries(sums).map(([name, v]) => [name, Number(v)]));
  return { ...usage, entry_count: count, has_usage: hasUsage };
}

// ------------------------------------------------------------------ engine.store_offsets

// A conversation pool in miniature: check-in stores an entry under a fingerprint, check-out takes
// it back out. An unknown generator offset (null) stays null: 0 would mean "ask from the start".
class Pool {
  #entries = new Map();
  checkin(fingerprint, entry) {
    const generatorOffset = ZERO_UNKNOWN_OFFSET ? (entry.generatorOffset ?? 0) : entry.generatorOffset;
    this.#entries.set(fingerprint, { ...entry, generatorOffset });
  }
  checkout(fingerprint) {
    const entry = this.#entries.get(fingerprint);
    this.#entries.delete(fingerprint);
    return entry;
  }
}

function storeOffsets({ step_offset, generator_offset }) {
  const pool = new Pool();
  pool.checkin("conformance-fp", { cascadeId: "c", stepOffset: step_offset, generatorOffset: generator_offset });
  const entry = pool.checkout("conformance-fp");
  return { step_offset: entry.stepOffset, generator_offset: entry.generatorOffset };
}

// ------------------------------------------------------------------ the protocol

function hello(params) {
  if (params.protocol !== 1) throw new Error(`protocol ${params.protocol} is not supported`);
  const defects = given.map((flag) => flag.slice(2)).join(", ");
  return {
    protocol: 1,
    name: defects ? `node gateway adapter (${defects})` : "node gateway adapter",
    operations: ["ls.decode_request", "engine.parse_generator_metadata", "engine.store_offsets"],
    // No operation here has optional result fields, so nothing to declare under "observes".
    capabilities: { "ls.decode_request": { methods: Object.keys(TABLE) } },
  };
}

function answer({ op, params }) {
  switch (op) {
    case "hello": return hello(params);
    case "ls.decode_request": return decodeRequest(params.method, Buffer.from(params.raw_b64, "base64"));
    case "engine.parse_generator_metadata":
      return { usage: parseGeneratorMetadata(Buffer.from(params.raw_b64, "base64")) };
    case "engine.store_offsets": return storeOffsets(params);
    default: throw new Error(`unknown operation ${op}`);
  }
}

console.error(`gateway-adapter: ready${given.length ? ` (${given.join(" ")})` : ""}`);
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    console.error(`gateway-adapter: not a JSON request: ${line.slice(0, 200)}`);
    process.exit(2);
  }
  let reply;
  try {
    reply = { id: request.id, result: answer(request) };
  } catch (err) {
    console.error(`gateway-adapter: ${request.op} failed: ${err.stack}`);
    reply = { id: request.id, error: { message: err.message } };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
