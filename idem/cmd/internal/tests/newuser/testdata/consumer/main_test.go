package consumer_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/kit/idem"
	"github.com/idemkit/kit/idem/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// credit is the effect all three consumers apply: cents more on account.
func credit(env *idemtest.Env, account string, cents int64) (idem.Effect, error) {
	w, err := idem.Update(env.Accounts, map[string]string{"account": account},
		expression.Add(expression.Name("balance"), expression.Value(cents)))
	return idem.Effect{Writes: []types.TransactWriteItem{w}}, err
}
