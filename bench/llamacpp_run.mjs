// Runs llama.cpp (the npm package node-llama-cpp, its prebuilt CPU backend) on a GGUF model:
// greedy generation of --new-tokens tokens after the prompt given as token ids (no tokenizer
// text), and prints one JSON line: prefill and decode seconds, the generated ids, the backend.
//
// usage: node bench/llamacpp_run.mjs --model FILE --prompt 1,2,3 --new-tokens N
//        [--threads 2] [--package DIR (default bench/.llamacpp, where npm installed it)]
//
// Prefill is the prompt's evaluation up to the first generated token; decode the remaining
// new_tokens - 1 steps of one token each, as llama_generate counts them. One untimed token is
// evaluated first and erased, so that llama.cpp's first-call costs (thread start, buffers) are
// not measured; this favours llama.cpp slightly (llama_generate times its first call).
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    model: { type: "string" },
    prompt: { type: "string" },
    "new-tokens": { type: "string" },
    threads: { type: "string", default: "2" },
    package: { type: "string", default: join(here, ".llamacpp") },
  },
});

function fail(message) {
  process.stderr.write(`llamacpp_run: ${message}\n`);
  process.exit(1);
}

function positive(name, text) {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) fail(`--${name}: expected an integer > 0, got '${text}'`);
  return n;
}

if (!values.model) fail("--model FILE is required");
if (!values.prompt) fail("--prompt is required (comma-separated token ids)");
const prompt = values.prompt.split(",").map((t) => {
  const n = Number(t);
  if (!Number.isInteger(n) || n < 0) fail(`--prompt: expected token ids >= 0, got '${t}'`);
  return n;
});
const newTokens = positive("new-tokens", values["new-tokens"]);
const threads = positive("threads", values.threads);

const entry = join(resolve(values.package), "node_modules", "node-llama-cpp", "dist", "index.js");
let lib;
try {
  lib = await import(pathToFileURL(entry).href);
} catch (e) {
  fail(`cannot load node-llama-cpp from ${entry} (${e.message})`);
}
const { getLlama, LlamaLogLevel } = lib;

// CPU only, the prebuilt binaries only (never a local build or a download), `threads` threads.
const llama = await getLlama({
  gpu: false,
  build: "never",
  usePrebuiltBinaries: true,
  skipDownload: true,
  progressLogs: false,
  maxThreads: threads,
  logLevel: LlamaLogLevel.error,
});
const model = await llama.loadModel({ modelPath: values.model, gpuLayers: 0 });
// llama.cpp refuses token ids outside the vocab itself (llama_decode fails).
const context = await model.createContext({
  contextSize: prompt.length + newTokens + 1,
  batchSize: prompt.length,
  threads: { ideal: threads, min: threads },
  sequences: 1,
});
const sequence = context.getSequence();
const greedy = { token: true, options: { temperature: 0 } };

async function step(tokens) {
  const items = tokens.map((t, i) => (i + 1 === tokens.length ? [t, { generateNext: greedy }] : t));
  const out = await sequence.controlledEvaluate(items);
  const next = out[tokens.length - 1]?.next?.token;
  if (next == null) fail("llama.cpp returned no token");
  return next;
}

await step(prompt.slice(0, 1)); // warm-up, then forgotten
await sequence.clearHistory();

const generated = [];
let t0 = performance.now();
generated.push(await step(prompt));
const prefillSeconds = (performance.now() - t0) / 1e3;
t0 = performance.now();
for (let i = 1; i < newTokens; ++i) generated.push(await step([generated[generated.length - 1]]));
const decodeSeconds = (performance.now() - t0) / 1e3;

console.log(JSON.stringify({
  prefill_tokens: prompt.length,
  prefill_seconds: prefillSeconds,
  decode_tokens: newTokens - 1,
  decode_seconds: decodeSeconds,
  tokens: generated,
  threads: context.currentThreads,
  flash_attention: context.flashAttention,
  llama_cpp: llama.llamaCppRelease.release,
  system_info: llama.systemInfo,
}));
await context.dispose();
await model.dispose();
await llama.dispose();
