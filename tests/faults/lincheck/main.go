// Command lincheck checks the fault harness's metadata history (tests/faults/linearizable.py) for
// linearizability with porcupine (github.com/anishathalye/porcupine), one key at a time:
//
//   - topic/<name>: an existence register. create -> created (legal only if absent) | exists (only if
//     present) | unknown (no answer: it may take effect at any point after its call) | failed (refused,
//     no effect); exists -> exists | missing (a Metadata answer). observe: the same answer checked
//     against one gateway's own history (creates through others unseen): once shown, never missing.
//   - leader/<topic>/<partition>: a versioned register of (leader epoch, leader) whose writes are the
//     cluster's own elections, unseen by the client: a read may show a newer epoch (an election
//     happened), never an older one than an earlier-linearized read, and one epoch has one leader
//     (leader -1, "none", matches any).
//   - offsets/<group>/<partition>: a read/write register (OffsetCommit of unique increasing offsets,
//     OffsetFetch through whichever gateway FindCoordinator names), across coordinator moves.
//
// Input (stdin): {"ops": [{"client", "key", "kind", "result", "value", "leader", "epoch", "call",
// "return"}], "timeout_s", "visualize"}; times in seconds, "return" null when no answer came (the
// operation stays open to the end). Output (stdout): {"keys", "ops", "illegal": [keys], "unknown":
// [keys timed out], "valid"}; with "visualize", porcupine's HTML of the first illegal key.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

type op struct {
	Client int      `json:"client"`
	Key    string   `json:"key"`
	Kind   string   `json:"kind"`
	Result string   `json:"result"`
	Value  int64    `json:"value"`
	Leader int      `json:"leader"`
	Epoch  int      `json:"epoch"`
	Call   float64  `json:"call"`
	Return *float64 `json:"return"`
}

type input struct {
	Ops       []op    `json:"ops"`
	TimeoutS  float64 `json:"timeout_s"`
	Visualize string  `json:"visualize"`
}

type state struct {
	Exists bool
	Epoch  int
	Leader int
	Value  int64
}

const open = int64(1) << 62 // the return time of an operation that never answered

func step(s0, in, _ interface{}) (bool, interface{}) {
	s, o := s0.(state), in.(op)
	switch o.Kind {
	case "create":
		switch o.Result {
		case "created":
			if s.Exists {
				return false, s
			}
			s.Exists = true
			return true, s
		case "exists":
			return s.Exists, s
		case "unknown":
			s.Exists = true
			return true, s
		}
		return true, s // failed: no effect
	case "exists":
		return s.Exists == (o.Result == "exists"), s
	case "observe": // one gateway's own answers: another gateway's create may show up at any time
		if o.Result == "exists" {
			s.Exists = true
			return true, s
		}
		return !s.Exists, s
	case "leader":
		if o.Epoch > s.Epoch {
			s.Epoch, s.Leader = o.Epoch, o.Leader
			return true, s
		}
		if o.Epoch < s.Epoch {
			return false, s
		}
		if o.Leader == -1 || s.Leader == -1 || o.Leader == s.Leader {
			if o.Leader != -1 {
				s.Leader = o.Leader
			}
			return true, s
		}
		return false, s
	case "write":
		if o.Result == "ok" || o.Result == "unknown" {
			s.Value = o.Value
		}
		return true, s
	case "read":
		return o.Value == s.Value, s
	}
	return false, s
}

func describe(in, _ interface{}) string {
	o := in.(op)
	switch o.Kind {
	case "leader":
		return fmt.Sprintf("g%d: leader %d epoch %d", o.Client, o.Leader, o.Epoch)
	case "write", "read":
		return fmt.Sprintf("g%d: %s %d (%s)", o.Client, o.Kind, o.Value, o.Result)
	}
	return fmt.Sprintf("g%d: %s -> %s", o.Client, o.Kind, o.Result)
}

var model = porcupine.Model{
	Init:              func() interface{} { return state{Epoch: -1, Leader: -1, Value: -1} },
	Step:              step,
	DescribeOperation: describe,
	DescribeState: func(s interface{}) string {
		st := s.(state)
		return fmt.Sprintf("exists %v, epoch %d leader %d, value %d", st.Exists, st.Epoch, st.Leader, st.Value)
	},
}

func operations(ops []op) map[string][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, o := range ops {
		ret := open
		if o.Return != nil {
			ret = int64(*o.Return * 1e9)
		}
		byKey[o.Key] = append(byKey[o.Key], porcupine.Operation{
			ClientId: o.Client, Input: o, Call: int64(o.Call * 1e9), Output: nil, Return: ret})
	}
	return byKey
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "lincheck: bad input:", err)
		os.Exit(2)
	}
	if in.TimeoutS <= 0 {
		in.TimeoutS = 10
	}
	byKey := operations(in.Ops)
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	illegal, unknown := []string{}, []string{}
	for _, k := range keys {
		result, info := porcupine.CheckOperationsVerbose(model, byKey[k], time.Duration(in.TimeoutS*float64(time.Second)))
		switch result {
		case porcupine.Illegal:
			if len(illegal) == 0 && in.Visualize != "" {
				_ = porcupine.VisualizePath(model, info, in.Visualize)
			}
			illegal = append(illegal, k)
		case porcupine.Unknown:
			unknown = append(unknown, k)
		}
	}
	out := map[string]interface{}{"keys": len(keys), "ops": len(in.Ops), "illegal": illegal, "unknown": unknown,
		"valid": len(illegal) == 0}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}
