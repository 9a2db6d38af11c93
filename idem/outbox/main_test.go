package outbox_test

import (
	"testing"

	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }
