package wire

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
)

// A stored response is: the format version (1), the status as a varint,
// the header count and each name and value, lengths as uvarints, names
// sorted; then the body, to the end.
const responseFormat = 1

// EncodeResponse is a webhook answer as a claim stores it (idem/webhook
// writes it; the idem command reads it).
func EncodeResponse(status int, headers map[string]string, body []byte) []byte {
	n := 1 + binary.MaxVarintLen64*(2+2*len(headers)) + len(body)
	for k, v := range headers {
		n += len(k) + len(v)
	}
	b := make([]byte, 0, n)
	b = append(b, responseFormat)
	b = binary.AppendVarint(b, int64(status))
	b = binary.AppendUvarint(b, uint64(len(headers)))
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(headers[k])))
		b = append(b, headers[k]...)
	}
	return append(b, body...)
}

// ErrStoredResponse: the bytes are not a stored webhook answer.
var ErrStoredResponse = errors.New("not a stored webhook response")

// DecodeResponse reads what EncodeResponse wrote, and refuses anything else
// without panicking.
func DecodeResponse(b []byte) (status int, headers map[string]string, body []byte, err error) {
	if len(b) == 0 || b[0] != responseFormat {
		return 0, nil, nil, ErrStoredResponse
	}
	b = b[1:]
	st, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, nil, ErrStoredResponse
	}
	b = b[n:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)-n)/2 { // each header takes 2 bytes at least
		return 0, nil, nil, ErrStoredResponse
	}
	b = b[n:]
	headers = make(map[string]string, count)
	for range count {
		var k, v string
		var ok bool
		if k, b, ok = readString(b); !ok {
			return 0, nil, nil, ErrStoredResponse
		}
		if v, b, ok = readString(b); !ok {
			return 0, nil, nil, ErrStoredResponse
		}
		headers[k] = v
	}
	return int(st), headers, b, nil
}

func readString(b []byte) (string, []byte, bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return "", nil, false
	}
	b = b[n:]
	return string(b[:l]), b[l:], true
}
