// The fault harness's Go RocketMQ workload (tests/faults/go_load.py): apache/rocketmq-client-go v2
// (remoting) sends unique ints synchronously, value mod the queue count as the queue, no client
// retries (a duplicate would be the server's). ok only on SEND_OK (the SYNC_MASTER contract); another
// status, a timeout or a client error is info (maybe written); a broker's refusal (the client's error
// "CODE: n, DESC: ...", as the Java client's MQBrokerException) is fail. One JSON line per operation (invoke, then the outcome), times in seconds of CLOCK_MONOTONIC
// since the harness's t0 (as Python's time.monotonic). Runs until its stdin closes. The client
// re-reads routes every 30 s (fixed in this client, not configurable as the Java one's).
//
//	rmqgo NAMESRV[;NAMESRV...] TOPIC T0 OUT
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var (
	t0  float64
	out *os.File
	mu  sync.Mutex
)

// monotonic is CLOCK_MONOTONIC in seconds (Go's time package keeps its monotonic reading private).
func monotonic() float64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

func logOp(op map[string]interface{}) {
	op["time"] = float64(int64((monotonic()-t0)*1000)) / 1000
	line, _ := json.Marshal(op)
	mu.Lock()
	defer mu.Unlock()
	out.Write(append(line, '\n'))
}

// byValue puts value v on queue v mod the queue count, as the other RocketMQ workloads do.
type byValue struct{}

func (byValue) Select(msg *primitive.Message, mqs []*primitive.MessageQueue, _ string) *primitive.MessageQueue {
	v, _ := strconv.Atoi(string(msg.Body))
	return mqs[v%len(mqs)]
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: rmqgo NAMESRV TOPIC T0 OUT")
		os.Exit(2)
	}
	namesrv, topic := os.Args[1], os.Args[2]
	var err error
	if t0, err = strconv.ParseFloat(os.Args[3], 64); err != nil {
		fmt.Fprintln(os.Stderr, "bad T0:", err)
		os.Exit(2)
	}
	if out, err = os.Create(os.Args[4]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rlog.SetLogLevel("warn")
	var stop atomic.Bool
	go func() { io.Copy(io.Discard, os.Stdin); stop.Store(true) }()
	p, err := rocketmq.NewProducer(producer.WithNameServer(strings.Split(namesrv, ";")), producer.WithGroupName("faults-go-rmq-producers"),
		producer.WithRetry(0), producer.WithSendMsgTimeout(5*time.Second), producer.WithQueueSelector(byValue{}))
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
	for value := 0; !stop.Load(); value++ {
		logOp(map[string]interface{}{"type": "invoke", "f": "send", "value": value})
		r, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(strconv.Itoa(value))))
		op := map[string]interface{}{"f": "send", "value": value}
		switch {
		case err == nil && r.Status == primitive.SendOK:
			op["type"], op["partition"], op["offset"] = "ok", r.MessageQueue.QueueId, r.QueueOffset
		case err == nil:
			op["type"], op["status"] = "info", fmt.Sprint(r.Status)
		case strings.HasPrefix(err.Error(), "CODE: "):
			op["type"], op["error"] = "fail", err.Error()
		default:
			op["type"], op["error"] = "info", err.Error()
		}
		logOp(op)
		if op["type"] == "info" && err != nil {
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Shutdown()
	out.Close()
}
