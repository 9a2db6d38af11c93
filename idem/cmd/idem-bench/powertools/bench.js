// Powertools for AWS Lambda (TypeScript) idempotency, the real package, on
// idem-bench's local DynamoDB (and through its latency model when
// IDEM_BENCH_MODEL_ENDPOINT is set): a credit handler written as a
// Powertools user writes it (makeIdempotent around a handler that does its
// own UpdateItem), timed and counted the way idem-bench times and counts
// the Go strategies.
// idem-bench creates the tables and passes them in the environment; this
// prints one JSON object on stdout and nothing else there. With
// IDEM_BENCH_STREAMS it plays the streams that file holds instead (streams
// below), with IDEM_BENCH_HOT_MESSAGES one run of the hot-item section
// (hot below), else the latency, crash and race runs (classic below).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`bench.js: ${name} is not set (idem-bench sets it)`);
  return v;
};
const endpoint = env('IDEM_BENCH_ENDPOINT');
const recordsTable = env('IDEM_BENCH_POWERTOOLS_TABLE');
const accountsTable = env('IDEM_BENCH_ACCOUNTS_TABLE');
// The DynamoDB latency model in front of the same server, when idem-bench
// runs it: latencies are measured on both, taking turns.
const modelEndpoint = process.env.IDEM_BENCH_MODEL_ENDPOINT;

// How long a "dead" invocation's INPROGRESS record blocks redeliveries: the
// Lambda time left when it died. Short, so the run stays short.
const deadRemainingMs = 1000;

// A counting client: one middleware at the initialize step counts each
// command once, however many attempts its retries make, as
// idemtest.CallCounter does on the Go side.
function countingClient(endpoint) {
  const calls = {};
  const client = new DynamoDBClient({
    endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  client.middlewareStack.add((next, context) => (args) => {
    calls[context.commandName] = (calls[context.commandName] ?? 0) + 1;
    return next(args);
  }, { step: 'initialize', name: 'idemBenchCallCounter' });
  const total = () => Object.values(calls).reduce((a, b) => a + b, 0);
  const reset = () => { for (const k of Object.keys(calls)) delete calls[k]; };
  return { client, calls, total, reset };
}

// One warm execution environment: its client, its persistence layer and its
// idempotent handler. crash maps a message id whose next delivery fails
// right after the business write to 'throw', or to a function to call as
// its process "dies".
function environment(useLocalCache, endpoint) {
  const counter = countingClient(endpoint);
  const doc = DynamoDBDocumentClient.from(counter.client);
  const crash = new Map();
  const persistenceStore = new DynamoDBPersistenceLayer({ tableName: recordsTable, awsSdkV3Client: counter.client });
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'id', useLocalCache });
  const handler = makeIdempotent(async (event) => {
    await doc.send(new UpdateCommand({
      TableName: accountsTable, Key: { account: event.account },
      UpdateExpression: 'ADD balance :c', ExpressionAttributeValues: { ':c': event.cents },
    }));
    const fail = crash.get(event.id);
    crash.delete(event.id);
    if (fail === 'throw') throw new Error('failed after the effect');
    if (fail) {
      // The process dies here: Powertools neither completes nor deletes the
      // record. A promise that never settles is that, seen from DynamoDB.
      fail();
      return new Promise(() => {});
    }
    return { ok: true };
  }, { persistenceStore, config });
  return { ...counter, crash, handler };
}

// The floor: the same credit through the same SDK, with no idempotency. It
// takes turns with the Powertools environments, so their ratio to it does
// not depend on the shared machine's load at the time.
function bareEnvironment(endpoint) {
  const counter = countingClient(endpoint);
  const doc = DynamoDBDocumentClient.from(counter.client);
  const handler = (event) => doc.send(new UpdateCommand({
    TableName: accountsTable, Key: { account: event.account },
    UpdateExpression: 'ADD balance :c', ExpressionAttributeValues: { ':c': event.cents },
  }));
  return { ...counter, handler };
}

// A Lambda context as the runtime passes it: Powertools reads the time left
// to set the INPROGRESS record's in_progress_expiration.
const context = (remainingMs = 30_000) => ({
  functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, awsRequestId: `req-${performance.now()}`,
  getRemainingTimeInMillis: () => remainingMs,
});

const percentile = (d, p) => {
  const s = [...d].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
};

// perMessage turns {PutItemCommand: 600} into {PutItem: 2} for n = 300.
const perMessage = (calls, n) =>
  Object.fromEntries(Object.entries(calls).map(([op, c]) => [op.replace(/Command$/, ''), c / n]));

// latencies: n new messages one after another, then each again, the
// environments taking turns as the Go strategies do.
async function latencies(envs, n) {
  const out = envs.map(() => ({ first: [], dup: [], calls: [] }));
  for (let k = 0; k < envs.length; k++) {
    for (let i = 0; i < 3; i++) await envs[k].handler({ id: `pt${k}-warm-${i}`, account: 'warm', cents: 1 }, context());
  }
  for (const pass of ['first', 'dup']) {
    envs.forEach((e) => e.reset());
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < envs.length; k++) {
        const start = performance.now();
        await envs[k].handler({ id: `pt${k}-lat-${i}`, account: `pt-lat-${i % 10}`, cents: 1 }, context());
        out[k][pass].push(performance.now() - start);
      }
    }
    envs.forEach((e, k) => out[k].calls.push({ total: e.total() / n, byOperation: perMessage(e.calls, n) }));
  }
  return out.map((o) => ({
    callsFirst: o.calls[0].total, callsDup: o.calls[1].total,
    opsFirst: o.calls[0].byOperation, opsDup: o.calls[1].byOperation,
    firstP50Ms: percentile(o.first, 0.5), firstP99Ms: percentile(o.first, 0.99),
    dupP50Ms: percentile(o.dup, 0.5), dupP99Ms: percentile(o.dup, 0.99),
  }));
}

// untilDone redelivers until a delivery succeeds, as a queue would:
// "already in progress" is an error the queue retries.
async function untilDone(e, m) {
  let err;
  for (let i = 0; i < 100; i++) {
    try { return await e.handler(m, context()); } catch (x) { err = x; }
    await sleep(20);
  }
  throw new Error(`${m.id} never succeeded: ${err}`);
}

const msg = (prefix, i) => ({ id: `${prefix}-${i}`, account: `${prefix}-${i}`, cents: 1 });

async function countDoubles(e, prefix, n) {
  let doubles = 0;
  for (let i = 0; i < n; i++) {
    const out = await e.client.send(new GetItemCommand({
      TableName: accountsTable, Key: { account: { S: `${prefix}-${i}` } }, ConsistentRead: true,
    }));
    const bal = Number(out.Item?.balance?.N ?? 0);
    if (bal === 0) throw new Error(`${prefix}-${i} was never credited`);
    if (bal > 1) doubles++;
  }
  return doubles;
}

// The handler throws after its write: Powertools deletes the record, the
// redelivery runs the handler again.
async function crashThrow(e, prefix, n) {
  for (let i = 0; i < n; i++) {
    const m = msg(prefix, i);
    e.crash.set(m.id, 'throw');
    await e.handler(m, context()).catch(() => {});
    await untilDone(e, m);
  }
  return countDoubles(e, prefix, n);
}

// The process dies after the write: the INPROGRESS record stays until the
// time the invocation had left runs out; redeliveries are "in progress"
// until then, and the next one runs the handler again.
async function crashDie(e, prefix, n) {
  for (let i = 0; i < n; i++) {
    const m = msg(prefix, i);
    const died = new Promise((resolve) => e.crash.set(m.id, resolve));
    e.handler(m, context(deadRemainingMs)).catch(() => {});
    await died;
  }
  for (let i = 0; i < n; i++) await untilDone(e, msg(prefix, i));
  return countDoubles(e, prefix, n);
}

// Each message delivered 4 times at once, each delivery retried until done.
async function race(e, prefix, n) {
  const all = [];
  for (let i = 0; i < n; i++) for (let j = 0; j < 4; j++) all.push(untilDone(e, msg(prefix, i)));
  await Promise.all(all);
  return countDoubles(e, prefix, n);
}

const version = (pkg) => JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;

const versions = () => ({
  node: process.version,
  '@aws-lambda-powertools/idempotency': version('@aws-lambda-powertools/idempotency'),
  '@aws-sdk/client-dynamodb': version('@aws-sdk/client-dynamodb'),
  '@aws-sdk/lib-dynamodb': version('@aws-sdk/lib-dynamodb'),
});

// classic: the latency table (each message delivered twice), then the
// crash window and the race, on the local server.
async function classic() {
  const latN = Number(env('IDEM_BENCH_LATENCY'));
  const faultN = Number(env('IDEM_BENCH_FAULTS'));
  const envs = [environment(false, endpoint), environment(true, endpoint)];
  const modelEnvs = modelEndpoint
    ? [environment(false, modelEndpoint), environment(true, modelEndpoint), bareEnvironment(modelEndpoint)] : [];
  const [off, on, floor, ...onModel] = await latencies([...envs, bareEnvironment(endpoint), ...modelEnvs], latN);
  const modes = [off, on];
  for (const [k, e] of envs.entries()) {
    modes[k].crashThrowDoubles = await crashThrow(e, `pt${k}-crash-throw`, faultN);
    modes[k].crashDieDoubles = await crashDie(e, `pt${k}-crash-die`, faultN);
    modes[k].raceDoubles = await race(e, `pt${k}-race`, faultN);
  }
  return {
    versions: versions(),
    cacheOff: off, cacheOn: on, floor, faults: faultN, deadRemainingMs,
    ...(modelEndpoint && { model: { cacheOff: onModel[0], cacheOn: onModel[1], floor: onModel[2] } }),
  };
}

// streams: the deliveries idem-bench ordered for its storm section (its
// file: {"streams": [{"name", "prefix", "deliveries": [[message, dup,
// timed], ...]}]}), played one at a time in that order through Powertools'
// default configuration (useLocalCache: false), each delivery on every
// server in turn, as the Go strategies play them. Server j's message i is
// "<prefix>.<j>-<i>", its id and the account it credits. Each server's
// figures: every timed delivery's milliseconds, and calls by operation.
async function streams(path) {
  const { streams } = JSON.parse(readFileSync(path, 'utf8'));
  const envs = [environment(false, endpoint), ...(modelEndpoint ? [environment(false, modelEndpoint)] : [])];
  const out = {};
  for (const st of streams) {
    const figs = envs.map(() => ({ firstMs: [], dupMs: [], opsFirst: {}, opsDup: {} }));
    for (const [i, dup, timed] of st.deliveries) {
      for (const [j, e] of envs.entries()) {
        const id = `${st.prefix}.${j}-${i}`;
        e.reset();
        const start = performance.now();
        await e.handler({ id, account: id, cents: 1 }, context());
        const took = performance.now() - start;
        if (!timed) continue;
        const f = figs[j];
        (dup ? f.dupMs : f.firstMs).push(took);
        const ops = dup ? f.opsDup : f.opsFirst;
        for (const [op, c] of Object.entries(perMessage(e.calls, 1))) ops[op] = (ops[op] ?? 0) + c;
      }
    }
    out[st.name] = figs;
  }
  return { versions: versions(), streams: out };
}

// The cause a failed delivery is counted under, as idem-bench's Go lines
// count theirs (hotlines.go): the error's name, or its cause's.
function causeOf(err) {
  for (let e = err; e; e = e.cause) {
    switch (e.name) {
      case 'TransactionConflictException': case 'ReplicatedWriteConflictException': return 'contention';
      case 'ThrottlingException': case 'ProvisionedThroughputExceededException': case 'RequestLimitExceeded': return 'throttling';
      case 'IdempotencyAlreadyInProgressError': return 'in flight';
      case 'TransactionCanceledException': {
        const codes = (e.CancellationReasons ?? []).map((r) => r.Code).filter((c) => c && c !== 'None');
        if (codes.some((c) => c === 'ThrottlingError')) return 'throttling';
        if (codes.length > 0 && codes.every((c) => c === 'TransactionConflict')) return 'contention';
        return 'other';
      }
      default:
    }
  }
  return 'other';
}

// hot: one run of idem-bench's hot-item section. IDEM_BENCH_HOT_ENVIRONMENTS
// workers, each an environment of its own (its client, persistence layer
// and idempotent handler, Powertools' default configuration), take messages
// one at a time from one in-memory queue; a delivery that fails puts its
// message back at the front of the queue at once and counts as failed to
// the sender. Message i is "<prefix>-i", crediting 1 cent to
// "<prefix>-acc-<i mod accounts>". Each delivery's context says
// IDEM_BENCH_HOT_DEADLINE_MS remain (Powertools sets its in-progress
// expiry from it); nothing here cuts a delivery off at it. Figures: the
// wall time from the first receive to the last credit, each message's
// first receive to its success, the failures by cause, calls by operation.
async function hot() {
  const n = Number(env('IDEM_BENCH_HOT_MESSAGES'));
  const workers = Number(env('IDEM_BENCH_HOT_ENVIRONMENTS'));
  const accounts = Number(env('IDEM_BENCH_HOT_ACCOUNTS'));
  const prefix = env('IDEM_BENCH_HOT_PREFIX');
  const deadlineMs = Number(env('IDEM_BENCH_HOT_DEADLINE_MS'));
  const maxReceives = Number(env('IDEM_BENCH_HOT_MAX_RECEIVES'));
  const envs = Array.from({ length: workers }, () => environment(false, endpoint));
  const ready = Array.from({ length: n }, (_, i) => i);
  const sent = new Array(n).fill(-1);
  const settled = new Array(n).fill(-1);
  const receives = new Array(n).fill(0);
  const causes = {};
  let done = 0;
  let failed = 0;
  let waiting = [];
  const wake = () => { const w = waiting; waiting = []; w.forEach((resolve) => resolve()); };
  const work = async (e) => {
    for (;;) {
      while (ready.length === 0 && done < n) await new Promise((resolve) => waiting.push(resolve));
      if (ready.length === 0) return;
      const i = ready.shift();
      if (++receives[i] > maxReceives) throw new Error(`${prefix}-${i} failed ${maxReceives} deliveries`);
      if (sent[i] < 0) sent[i] = performance.now();
      try {
        await e.handler({ id: `${prefix}-${i}`, account: `${prefix}-acc-${i % accounts}`, cents: 1 }, context(deadlineMs));
        settled[i] = performance.now();
        done++;
      } catch (err) {
        failed++;
        const c = causeOf(err);
        causes[c] = (causes[c] ?? 0) + 1;
        ready.unshift(i);
      }
      wake();
    }
  };
  await Promise.all(envs.map(work));
  const calls = {};
  for (const e of envs) {
    for (const [op, c] of Object.entries(e.calls)) {
      const name = op.replace(/Command$/, '');
      calls[name] = (calls[name] ?? 0) + c;
    }
  }
  return {
    versions: versions(),
    hot: {
      wallMs: Math.max(...settled) - Math.min(...sent),
      creditMs: settled.map((t, i) => t - sent[i]),
      failed, causes, calls,
    },
  };
}

const streamsPath = process.env.IDEM_BENCH_STREAMS;
const hotMode = process.env.IDEM_BENCH_HOT_MESSAGES;
const result = streamsPath ? await streams(streamsPath) : hotMode ? await hot() : await classic();
process.stdout.write(JSON.stringify(result) + '\n');
