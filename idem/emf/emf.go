package emf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/idemkit/kit/idem"
)

// Options configure a Writer. Every default is written once, on its field,
// and applied in New.
type Options struct {
	// Namespace is the metrics' CloudWatch namespace: 1 to 255 printable
	// ASCII characters, not all spaces, not starting with ":" or "AWS/"
	// (CloudWatch refuses such a namespace, and with it the metric).
	// Defaults to "Idem".
	Namespace string
}

// Writer writes one EMF line per outcome it observes. It is safe for
// concurrent use.
type Writer struct {
	namespace string
	mu        sync.Mutex // one line at a time
	w         io.Writer
	buf       []byte
}

// New returns a Writer of EMF lines to w, such as os.Stdout in Lambda, or
// an error for a namespace CloudWatch would refuse.
func New(w io.Writer, optFns ...func(*Options)) (*Writer, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Namespace == "" {
		o.Namespace = "Idem"
	}
	if w == nil {
		return nil, errors.New("emf: New: nil writer")
	}
	if err := checkNamespace(o.Namespace); err != nil {
		return nil, fmt.Errorf("emf: New: %w", err)
	}
	return &Writer{namespace: o.Namespace, w: w}, nil
}

// Observe implements idem.Observer.
func (w *Writer) Observe(_ context.Context, o idem.Observation) {
	source := o.Message.Source
	if source == "" {
		source = "unknown"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf[:0]
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, o.Time.UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = appendJSONString(b, w.namespace)
	if o.Message.Tenant != "" {
		// Per source, as for every delivery, and per source and tenant.
		b = append(b, `,"Dimensions":[["Source"],["Source","Tenant"]],"Metrics":[{"Name":"`...)
	} else {
		b = append(b, `,"Dimensions":[["Source"]],"Metrics":[{"Name":"`...)
	}
	b = append(b, o.Outcome...)
	b = append(b, `","Unit":"Count"}]}]},"Source":`...)
	b = appendJSONString(b, source)
	if o.Message.Tenant != "" {
		b = append(b, `,"Tenant":`...)
		b = appendJSONString(b, o.Message.Tenant)
	}
	if nf := (*idem.TableNotFoundError)(nil); o.Outcome == idem.TableNotFound && errors.As(o.Err, &nf) {
		// Properties, not dimensions: the line says which table is
		// missing, where, without a metric per table.
		b = append(b, `,"Table":`...)
		b = appendJSONString(b, strings.Join(nf.Tables, ","))
		b = append(b, `,"Region":`...)
		b = appendJSONString(b, nf.Region)
	}
	b = append(b, `,"`...)
	b = append(b, o.Outcome...)
	b = append(b, "\":1}\n"...)
	w.buf = b
	_, _ = w.w.Write(b)
}

// checkNamespace accepts what CloudWatch takes as a namespace.
func checkNamespace(ns string) error {
	switch {
	case len(ns) > 255:
		return fmt.Errorf("the Namespace is %d bytes; CloudWatch allows 255", len(ns))
	case strings.TrimSpace(ns) == "":
		return errors.New("the Namespace is all spaces; CloudWatch needs a character that is not")
	case ns[0] == ':' || strings.HasPrefix(ns, "AWS/"):
		return fmt.Errorf("the Namespace %q starts with \":\" or \"AWS/\", which CloudWatch refuses", ns)
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; c < ' ' || c > '~' {
			return fmt.Errorf("the Namespace %q has a control or non-ASCII character at byte %d; CloudWatch takes printable ASCII only", ns, i)
		}
	}
	return nil
}

// appendJSONString appends s as a JSON string; plain ASCII, the usual case,
// without allocating.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
