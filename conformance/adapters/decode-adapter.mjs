#!/usr/bin/env node
// A tiny cascade-conformance adapter in another language: it proves the exec: protocol is
// language-neutral. It implements one operation, ls.decode_request, for four small messages,
// with a schema-less protobuf reader and a field table taken from wire.md section 2.
//
//   cascade-conformance run --only WIRE-1,WIRE-2 --target "exec:node conformance/adapters/decode-adapter.mjs"
//
// --drop-unknown makes it forget unknown fields (a deliberately broken decoder for meta-tests).
import { createInterface } from "node:readline";

const DROP_UNKNOWN = process.argv.includes("--drop-unknown");
const STRING = "string", UINT = "uint";
const TABLE = {
  GetCascadeTrajectorySteps: { 1: ["cascade_id", STRING], 2: ["step_offset", UINT] },
  GetCascadeTrajectoryGeneratorMetadata: { 1: ["cascade_id", STRING], 2: ["generator_metadata_offset", UINT] },
  GetCascadeTrajectory: { 1: ["cascade_id", STRING] },
  AddTrackedWorkspace: { 1: ["workspace", STRING] },
};
const WIRE_TYPES = { 0: "varint", 1: "fixed64", 2: "len", 5: "fixed32" };
// ignoreBOM keeps a leading U+FEFF: by default TextDecoder silently strips it (the suite caught that).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

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

function asJsonNumber(big) {
  return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big.toString();
}

function decode(method, buf) {
  const table = TABLE[method];
  if (!table) return { rejected: `this adapter cannot decode ${method}` };
  const fields = {}, unknown = [];
  let pos = 0;
  try {
    while (pos < buf.length) {
      let key;
      [key, pos] = readVarint(buf, pos);
      const number = Number(key >> 3n), wireType = Number(key & 7n);
      if (number === 0) throw new Error("field number 0");
      let value;
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

function answer(request) {
  if (request.op === "hello") {
    if (request.params.protocol !== 1) throw new Error(`protocol ${request.params.protocol} is not supported`);
    return {
      protocol: 1,
      name: DROP_UNKNOWN ? "node decode adapter (drops unknown fields)" : "node decode adapter",
      operations: ["ls.decode_request"],
      capabilities: { "ls.decode_request": { methods: Object.keys(TABLE) } },
    };
  }
  if (request.op === "ls.decode_request") {
    return decode(request.params.method, Buffer.from(request.params.raw_b64, "base64"));
  }
  throw new Error(`unknown operation ${request.op}`);
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  const request = JSON.parse(line);
  let reply;
  try {
    reply = { id: request.id, result: answer(request) };
  } catch (err) {
    reply = { id: request.id, error: { message: err.message } };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
