// Command idem-bench runs this kit side by side with check-then-act, the
// two-phase lock and a bare UpdateItem on one local DynamoDB endpoint, and
// Powertools for AWS Lambda (TypeScript) itself on the same endpoint, the
// kit's lease mode beside its one-transaction mode, streams of duplicates
// (rare, a redelivery storm counted and not, every message twice) through
// the kit, the Go two-phase lock and Powertools, a sweep of
// Options.ReadFirstAbove, deliveries of one key at once in one process,
// one account credited by many environments at once (hot items), then
// the kit's CPU benchmarks and its functions' cold starts (-only picks
// some), and prints the tables (and writes them as Markdown with -out). Run it from the module's
// root: it builds the functions with the Makefile, as sam build does.
//
// Every latency is measured twice, taking turns: on the local server, which
// prices a transaction about like a single write, and through a model of
// DynamoDB's published latencies in front of it (model.go: the figures, their
// source and -model's file format; -model off skips it).
//
// `make bench` runs it with every section and writes RESULTS.md (the
// tables, with the machine, its load and the date) and bench.txt (the Go
// benchmarks' raw output, benchstat's input) beside this file;
// BENCH_FLAGS='-latency 100 -throughput 200 -count 1' makes a quicker run,
// BENCH_FLAGS='-only lease' one section. Node.js 20 or later runs the
// Powertools peer (installed by npm ci from powertools/package-lock.json);
// without node one line says it was skipped.
//
// # What it measures
//
//   - Strategies side by side: this kit per record, with its claim cache,
//     and in batch transactions (through idem/sqsconsumer, as a function
//     runs it); the same transaction written by hand with no kit code;
//     check-then-act (GetItem, effect, PutItem); the two-phase lock of
//     Powertools (conditional PutItem, effect, UpdateItem) in Go; a bare
//     UpdateItem, the floor. For each: DynamoDB calls per first delivery
//     and per duplicate, counted by an SDK middleware; latency p50 and p99
//     one message at a time; throughput through batches of 10; and double
//     effects when a delivery fails right after its effect and when four
//     copies arrive at once.
//   - Powertools for TypeScript, the npm package itself
//     (@aws-lambda-powertools/idempotency, pinned in powertools/), with a
//     credit handler written as its users write it, with and without its
//     local cache, beside a bare UpdateItem from the same Node process; its
//     crash window both ways: the handler throws after its write, or its
//     process dies there.
//   - Duplicates in numbers (-only storm): four streams played one
//     delivery at a time, in one order drawn from -seed, by every
//     strategy: rare (1 message in 19 delivered twice, 5% of deliveries,
//     through the SQS adapter with receive counts); a counted storm
//     (every message 3 times, each duplicate 1 to 9 messages after its
//     first, messages interleaved, each SQS record with its
//     ApproximateReceiveCount, so Message.Attempt is set); an uncounted
//     storm (the same order with no receive count: a provider's or a
//     relay's resends); and twice (every message twice, through
//     Store.Process with no Attempt). -streams timed messages each after
//     32 untimed ones that let the kit's per-sender share of duplicates
//     settle (a moving average over about 16 deliveries, which
//     ReadFirstAbove is compared with). This kit with its defaults
//     (ReadFirstAbove 0.3: deliveries like it mostly duplicates, a
//     delivery reads its claim before its transaction, and sends none
//     when the read finds it), and with ReadFirstAbove -1 (never reads);
//     the Go two-phase lock (the lock-then-complete algorithm of
//     Powertools and its Go port); the floor (one 2-action
//     TransactWriteItems per first delivery, one GetItem per duplicate,
//     no idempotency code); and Powertools for TypeScript with its
//     default configuration through bench.js, the same orders on the same
//     servers. For each: first-delivery and duplicate p50 and p99, their
//     mean, calls per delivery by operation and double effects; how this
//     kit answered its duplicates (a read, or a cancelled transaction);
//     and what a message costs per stream in request units and dollars,
//     by DynamoDB's documentation. The targets are judged on the model's
//     figures, per stream: this kit's first-delivery p50, and its mean
//     of first and duplicate, at most the two-phase lock's and
//     Powertools', the p99s stated beside.
//   - The ReadFirstAbove sweep (-only sweep): the kit with the library's
//     default and each of -sweepat, over streams of 5%, 20%, 40% and 50%
//     duplicates (-sweep messages each), on the model alone: each value's
//     mean delivery time, measured and as the model's distributions make
//     the calls it made cost on average, and which value is lowest.
//   - Deliveries of one key at once in one process (-only coalesce): one
//     Store, 8 goroutines released together delivering the same message
//     through Store.Process, the handler holding 50 ms, over -coalesce
//     messages: calls and handler runs per message (1 each), outcomes and
//     double effects, on every server.
//   - Hot items (-only hot): 1, 8 and 64 environments (-hotenvs), each
//     with its own Store, SDK client and state, credit one account and ten
//     (-hot messages a run, spread evenly) from one in-memory queue, which
//     delivers a failed delivery again at once with its receive count one
//     more, each delivery with a 30 s deadline: this kit through
//     Store.Process per message, through the SQS adapter per record and
//     with BatchTransactions (batches of 10), the Go two-phase lock per
//     message and in batches of 10 (records at once), and Powertools for
//     TypeScript (bench.js's hot mode). On the model alone, its latencies
//     ×-hotscale and its conflict model on (conflicts.go: a transaction
//     holds its items until it is answered, what meets them is refused
//     with DynamoDB's errors, a partition has 1,000 write units a second,
//     divided by -hotscale), which no other section uses. For each:
//     credits a second, calls per credit, the price per million credits,
//     deliveries failed to the sender and why, a credit's p50 and p99,
//     credits double and lost, and what capped the figure (the local
//     server, whose own rate it measures first, the model's partition
//     limit or conflicts, or the environments). A line is one value of
//     hotLines (hotlines.go), a name and how an environment delivers a
//     message or a batch; the table gains its rows.
//   - The lease mode beside the one-transaction mode, the handler calling a
//     stand-in payment API (-external, 20 ms) that deduplicates its key:
//     latency, and the external calls made when each message is delivered
//     at once from 8 environments (-environments) that retry a held lease
//     as SQS would.
//   - The outbox: a first delivery with one outgoing message beside one
//     without; the relay's cost to send a batch, one call at a time beside
//     its default concurrency, to an SQS stand-in with a fixed round trip
//     (-relayrtt), since the local SQS's time per call is moto's; and a
//     webhook credit's way to its ledger entry through the whole local
//     stack (-ledger), which the emulated mappings' poll intervals
//     dominate.
//   - The SQS adapter on batches of 10, per record and in batch
//     transactions, with and without duplicates.
//   - The kit's CPU cost and allocations per message (Go benchmarks), and
//     the local server's price of one transaction by table size.
//   - Each function's bootstrap size, stripped, and its INIT time under the
//     Lambda Runtime Interface Emulator.
//
// The report ends with its targets, each met or missed. A figure from the
// local server alone says nothing of DynamoDB's latency: the server prices
// a transaction about like one write, DynamoDB as published at several, so
// compare strategies on the model's rows, and on calls and double effects,
// which no server changes.
package main
