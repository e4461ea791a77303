// The Kubernetes quantity parser as an oracle for topogen's (tests/core/test_quantities.py):
// one quantity per input line, a JSON string (trimmed as Quantity.UnmarshalJSON trims it); per line a JSON object: the input, whether
// resource.ParseQuantity accepts it, and its exact value as a decimal string, or "big"
// beyond 10^20 in magnitude (printing 1e999999999 in full would take gigabytes).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

type result struct {
	Input string `json:"input"`
	OK    bool   `json:"ok"`
	Value string `json:"value,omitempty"`
	Hang  bool   `json:"hang,omitempty"`
}

type parsed struct {
	q   resource.Quantity
	err error
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var text string
		if err := json.Unmarshal(in.Bytes(), &text); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		done := make(chan parsed, 1)
		go func() {
			// as Quantity.UnmarshalJSON does: Kubernetes reads every manifest through it
			q, err := resource.ParseQuantity(strings.TrimSpace(text))
			done <- parsed{q, err}
		}()
		var q resource.Quantity
		var err error
		select {
		case p := <-done:
			q, err = p.q, p.err
		case <-time.After(2 * time.Second): // 1e-2147483648 takes Kubernetes forever
			_ = out.Encode(result{Input: text, Hang: true})
			continue
		}
		r := result{Input: text, OK: err == nil}
		if err == nil {
			d := q.AsDec()
			digits := len(new(big.Int).Abs(d.UnscaledBig()).String())
			if d.UnscaledBig().Sign() != 0 && int64(digits)-int64(d.Scale()) > 20 {
				r.Value = "big"
			} else {
				r.Value = d.String()
			}
		}
		if err := out.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
