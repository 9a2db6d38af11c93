package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/internal/wire"
)

type listOptions struct {
	source, outcome, since, until string
	limit                         int
	maxRCU                        float64
	yes, asJSON                   bool
}

func listFlags(fs *flag.FlagSet) func(context.Context, *env) error {
	var o listOptions
	fs.StringVar(&o.source, "source", "", "only claims of this Source (a queue's name, a route, stripe, ...)")
	fs.StringVar(&o.outcome, "outcome", "", "only claims with this outcome: Processed, Rejected or Pending")
	fs.StringVar(&o.since, "since", "", "only claims made at or after this `time`: RFC 3339, or a duration ago (24h, 7d)")
	fs.StringVar(&o.until, "until", "", "only claims made before this `time`: RFC 3339, or a duration ago")
	fs.IntVar(&o.limit, "limit", 0, "stop after this many matches (0: no limit); the Scan stops early and reads less")
	fs.Float64Var(&o.maxRCU, "max-rcu", 1000, "the estimated read capacity above which the Scan needs --yes")
	fs.BoolVar(&o.yes, "yes", false, "scan even when the estimate exceeds -max-rcu")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object a line, as found, instead of the sorted table")
	return func(ctx context.Context, e *env) error { return e.list(ctx, o) }
}

func (e *env) list(ctx context.Context, o listOptions) error {
	now := e.now()
	since, err := parseTime("-since", o.since, now)
	if err != nil {
		return err
	}
	until, err := parseTime("-until", o.until, now)
	if err != nil {
		return err
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return usagef("-since (%s) is not before -until (%s)", since.Format(time.RFC3339), until.Format(time.RFC3339))
	}
	outcome, err := parseOutcome(o.outcome)
	if err != nil {
		return err
	}
	if o.limit < 0 || o.maxRCU < 0 {
		return usagef("-limit and -max-rcu must not be negative")
	}
	// The cost first: a Scan reads every item, whatever the filter keeps.
	d, err := e.claims.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(e.claims.table)})
	if err != nil {
		return tableErr("DescribeTable", e.claims.table, err)
	}
	if err := e.claims.checkSchema(e.claims.table, d.Table); err != nil {
		return err
	}
	items, size := aws.ToInt64(d.Table.ItemCount), aws.ToInt64(d.Table.TableSizeBytes)
	// A Scan is charged by the size it reads, 4 KB a unit, halved for an
	// eventually consistent read; and at least one page's half unit.
	rcu := max(float64(size)/4096/2, 0.5)
	units := strconv.FormatFloat(math.Round(rcu*10)/10, 'f', -1, 64) + " read capacity units"
	if units == "1 read capacity units" {
		units = "1 read capacity unit"
	}
	fmt.Fprintf(e.stderr, "list: a Scan reads all of %s: about %s, %s, so about %s (eventually consistent: 4 KB per unit, halved; DynamoDB updates these figures about every six hours)\n",
		e.claims.table, plural(int(items), "item"), bytesText(size), units)
	if rcu > o.maxRCU && !o.yes {
		return failf("the estimate exceeds -max-rcu %.0f: nothing was read; pass --yes to scan anyway, or narrow it with -limit", o.maxRCU)
	}
	in, err := e.claims.scanInput(o.source, outcome)
	if err != nil {
		return err
	}
	progress := newProgress(e.stderr)
	var found []claimView
	enc := json.NewEncoder(e.stdout)
	scanned, matched := 0, 0
	p := dynamodb.NewScanPaginator(e.claims.db, in)
	for p.HasMorePages() && (o.limit == 0 || matched < o.limit) {
		page, err := p.NextPage(ctx)
		if err != nil {
			progress.done()
			return fmt.Errorf("scanning %s: %w", e.claims.table, err)
		}
		scanned += int(page.ScannedCount)
		for _, it := range page.Items {
			cl, err := e.claims.decode(it)
			if err != nil || !inRange(cl.ClaimedAt, since, until) || (o.limit > 0 && matched >= o.limit) {
				continue
			}
			matched++
			v := view(cl, now, false)
			if o.asJSON {
				if err := enc.Encode(v); err != nil {
					return err
				}
			} else {
				found = append(found, v)
			}
		}
		progress.printf("list: %s scanned, %d matched", plural(scanned, "item"), matched)
	}
	progress.done()
	if !o.asJSON {
		printList(e.stdout, found, now)
	}
	return nil
}

// scanInput scans for claims (outbox items and other items of a shared
// table left out), of source and outcome when given; the response, which
// list does not show, is not read back.
func (c *claims) scanInput(source string, outcome idem.Outcome) (*dynamodb.ScanInput, error) {
	a := c.names()
	cond := expression.Name(a.Outcome).AttributeExists().
		And(expression.Or(expression.Name(wire.KindAttr).AttributeNotExists(), expression.Name(wire.KindAttr).NotEqual(expression.Value(wire.Kind))))
	switch {
	case c.tenant != "": // a tenant's claims: KeyPrefix#t=TENANT#scope#id
		cond = cond.And(expression.Name(a.Key).BeginsWith(c.prefix + "#t=" + c.tenant + "#"))
	case c.prefix != "":
		cond = cond.And(expression.Name(a.Key).BeginsWith(c.prefix))
	}
	if a.SortKey != "" {
		cond = cond.And(expression.Name(a.SortKey).Equal(expression.Value(c.sortKeyValue)))
	}
	if source != "" {
		cond = cond.And(expression.Name(a.Source).Equal(expression.Value(source)))
	}
	if outcome != "" {
		cond = cond.And(expression.Name(a.Outcome).Equal(expression.Value(string(outcome))))
	}
	proj := expression.NamesList(expression.Name(a.Key), expression.Name(a.Source), expression.Name(a.Outcome), expression.Name(a.ClaimedAt),
		expression.Name(a.ExpiresAt), expression.Name(a.Fingerprint), expression.Name(a.PayloadDigest), expression.Name(a.LeaseUntil),
		expression.Name(a.Token), expression.Name(a.LeaseID), expression.Name(wire.KindAttr))
	expr, err := expression.NewBuilder().WithFilter(cond).WithProjection(proj).Build()
	if err != nil {
		return nil, err
	}
	return &dynamodb.ScanInput{TableName: aws.String(c.table), FilterExpression: expr.Filter(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()}, nil
}

func inRange(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}

func printList(w io.Writer, found []claimView, now time.Time) {
	slices.SortFunc(found, func(a, b claimView) int { return a.ClaimedAt.Compare(b.ClaimedAt) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLAIMED AT\tOUTCOME\tSOURCE\tKEY\tEXPIRES")
	for _, v := range found {
		outcome := v.Outcome
		if l := v.Lease; l != nil {
			if l.Live {
				outcome += " (lease live)"
			} else {
				outcome += " (lease ended)"
			}
		}
		exp := v.ExpiresAt.Format(time.RFC3339)
		if v.Expired {
			exp = "expired " + span(now.Sub(v.ExpiresAt)) + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ClaimedAt.Format(time.RFC3339), outcome, v.Source, v.Key, exp)
	}
	tw.Flush()
	fmt.Fprintln(w, plural(len(found), "claim"))
}

// parseTime reads an RFC 3339 time, a date, or a duration ago ("24h",
// "7d"); "" is no bound.
func parseTime(flagName, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("%s %q: want an RFC 3339 time (2026-12-01T09:00:00Z), a date (2026-12-01), or a duration ago (90m, 24h, 7d)", flagName, s)
}

func parseOutcome(s string) (idem.Outcome, error) {
	for _, o := range []idem.Outcome{idem.Processed, idem.Rejected, idem.Pending} {
		if strings.EqualFold(s, string(o)) {
			return o, nil
		}
	}
	if s == "" {
		return "", nil
	}
	return "", usagef("-outcome %q: a stored claim is Processed, Rejected or Pending (Duplicate and KeyReuse are deliveries, counted in the metrics, never stored)", s)
}

// plural is n and noun, with an s unless n is 1: "1 claim", "0 claims".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return plural(int(n), "byte")
}

// progress is a line on stderr that a terminal rewrites in place; other
// writers (a log) get a line a second at most, and the last one.
type progress struct {
	w       io.Writer
	tty     bool
	last    time.Time
	pending string // the latest update, not yet written
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	tty := false
	if ok {
		if st, err := f.Stat(); err == nil {
			tty = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return &progress{w: w, tty: tty}
}

func (p *progress) printf(format string, a ...any) {
	p.pending = fmt.Sprintf(format, a...)
	if time.Since(p.last) >= time.Second {
		p.flush()
	}
}

func (p *progress) flush() {
	if p.pending == "" {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K"+p.pending)
	} else {
		fmt.Fprintln(p.w, p.pending)
	}
	p.pending, p.last = "", time.Now()
}

func (p *progress) done() {
	p.flush()
	if p.tty && !p.last.IsZero() {
		fmt.Fprintln(p.w)
	}
}
