package outbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/kit/idem/internal/wire"
)

// FilterPattern is the event source mapping's filter for an outbox that
// shares its table with claims: new and replaced outbox items only (a
// claim, or a TTL deletion, is checkpointed without an invoke).
const FilterPattern = `{"eventName":["INSERT","MODIFY"],"dynamodb":{"NewImage":{"` + wire.KindAttr + `":{"S":["` + wire.Kind + `"]}}}}`

// item is an outbox item read from a stream record's new image.
type item struct {
	itemID, destination, typ, body, group, createdAt string
	attributes                                       map[string]string
	traceparent                                      string // the committing delivery's trace context
	traceHeader                                      string // the X-Ray header the send carries on: its span's
}

// errNotOutbox: the record is not a new outbox item, and has nothing to
// send.
var errNotOutbox = errors.New("not an outbox item")

// readItem reads rec's outbox item; errNotOutbox when rec is no insert or
// replacement of one, another error when it is one the relay cannot read.
func readItem(rec events.DynamoDBEventRecord) (item, error) {
	img := rec.Change.NewImage
	if rec.EventName != "INSERT" && rec.EventName != "MODIFY" {
		return item{}, errNotOutbox
	}
	if len(img) == 0 {
		// A KEYS_ONLY or OLD_IMAGE stream: no record tells an outbox item,
		// and passing them over would drop every message without a word.
		return item{}, fmt.Errorf("record %s has no new image: the stream's view type is %q; the relay needs NEW_IMAGE or NEW_AND_OLD_IMAGES",
			rec.EventID, rec.Change.StreamViewType)
	}
	if str(img, wire.KindAttr) != wire.Kind {
		return item{}, errNotOutbox
	}
	it := item{
		itemID: str(img, wire.IDAttr), destination: str(img, wire.DestinationAttr), typ: str(img, wire.TypeAttr),
		body: str(img, wire.BodyAttr), group: str(img, wire.GroupAttr), createdAt: str(img, wire.CreatedAtAttr),
		traceparent: str(img, wire.TraceParentAttr),
	}
	if v, ok := img[wire.AttributesAttr]; ok && v.DataType() == events.DataTypeMap {
		it.attributes = map[string]string{}
		for k, a := range v.Map() {
			if a.DataType() != events.DataTypeString {
				return item{}, fmt.Errorf("outbox item %s: attribute %q is not a string", it.itemID, k)
			}
			it.attributes[k] = a.String()
		}
	}
	switch {
	case it.itemID == "" || it.destination == "" || it.body == "":
		return item{}, fmt.Errorf("outbox item %q lacks its %s, %s or %s", it.itemID, wire.IDAttr, wire.DestinationAttr, wire.BodyAttr)
	case isEventBridge(it.destination) && it.typ == "":
		return item{}, fmt.Errorf("outbox item %s: an EventBridge event needs a type", it.itemID)
	}
	if isEventBridge(it.destination) {
		// The kit checks a detail before its commit; an item it did not
		// write (by hand, by another tool) is checked here, as a record.
		if err := wire.CheckDetail(it.body); err != nil {
			return item{}, fmt.Errorf("outbox item %s: its body cannot be an EventBridge detail: %v", it.itemID, err)
		}
	}
	return it, nil
}

func str(img map[string]events.DynamoDBAttributeValue, name string) string {
	if v, ok := img[name]; ok && v.DataType() == events.DataTypeString {
		return v.String()
	}
	return ""
}

const eventBridgePrefix = "eventbridge:"

func isEventBridge(destination string) bool { return strings.HasPrefix(destination, eventBridgePrefix) }

func isFIFO(queueURL string) bool { return strings.HasSuffix(queueURL, ".fifo") }

// groupID is a FIFO message group id SQS takes: the item's own when it
// is one (at most 128 characters, each printable ASCII), else a digest of
// it, so that one group stays one group.
func groupID(g string) string {
	ok := g != "" && len(g) <= 128
	for i := 0; ok && i < len(g); i++ {
		ok = g[i] > ' ' && g[i] < 0x7f
	}
	if ok {
		return g
	}
	sum := sha256.Sum256([]byte(g))
	return "g-" + hex.EncodeToString(sum[:16])
}

// detail is an EventBridge event's detail: the item's body, a JSON object
// readItem checked, with the outbox id added.
func detail(it item) string { return wire.Detail(it.itemID, it.body) }
