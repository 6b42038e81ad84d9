// Command rocketgrpc drives the stock Go gRPC SDK (github.com/apache/rocketmq-clients/golang/v5)
// against a MessagingService endpoint for tests/grpc/test_grpc_go_sdk.py and prints one JSON line:
//
//	rocketgrpc ENDPOINTS PREFIX
//
// normal: 10 messages to PREFIX-normal with tags TA/TB, a key and a property each; a SimpleConsumer
// of group PREFIX-normal-g subscribed to tag TA receives and acknowledges them; one more receive
// finds nothing. fifo: 10 messages of one message group to PREFIX-fifo, received in order by group
// PREFIX-fifo-g. The SDK connects with TLS (its default).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

type received struct {
	Body      string   `json:"body"`
	Tag       string   `json:"tag"`
	Keys      []string `json:"keys"`
	N         string   `json:"n"`
	IDMatches bool     `json:"id_matches"`
	Attempt   int32    `json:"attempt"`
	Group     string   `json:"group"`
}

func config(endpoints, group string) *rmq.Config {
	return &rmq.Config{Endpoint: endpoints, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}}
}

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

// receiveAll receives and acknowledges until want messages came or 30 s passed.
func receiveAll(c rmq.SimpleConsumer, want int, sent map[string]string) []received {
	var got []received
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		views, err := c.Receive(context.TODO(), 16, 20*time.Second)
		if err != nil { // MESSAGE_NOT_FOUND after the long poll, or a real failure: logged for the test
			fmt.Fprintf(os.Stderr, "receive: %v\n", err)
			continue
		}
		for _, v := range views {
			r := received{Body: string(v.GetBody()), Keys: v.GetKeys(), N: v.GetProperties()["n"],
				Attempt: v.GetDeliveryAttempt()}
			if v.GetTag() != nil {
				r.Tag = *v.GetTag()
			}
			if v.GetMessageGroup() != nil {
				r.Group = *v.GetMessageGroup()
			}
			r.IDMatches = sent[r.Body] == v.GetMessageId()
			must(c.Ack(context.TODO(), v), "ack")
			got = append(got, r)
		}
	}
	return got
}

// consumer long-polls 5 s: the SDK's receive deadline is that plus its 3 s request timeout, and the
// RocketMQ proxy refuses a receive whose deadline leaves less than its 5 s minimum long poll.
func consumer(endpoints, group, topic, tag string) rmq.SimpleConsumer {
	c, err := rmq.NewSimpleConsumer(config(endpoints, group), rmq.WithAwaitDuration(5*time.Second),
		rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.NewFilterExpression(tag)}))
	must(err, "consumer")
	must(c.Start(), "consumer start")
	return c
}

func main() {
	endpoints, prefix := os.Args[1], os.Args[2]
	normal, fifo := prefix+"-normal", prefix+"-fifo"
	p, err := rmq.NewProducer(config(endpoints, ""), rmq.WithTopics(normal, fifo))
	must(err, "producer")
	must(p.Start(), "producer start")
	defer p.GracefulStop()

	nc := consumer(endpoints, normal+"-g", normal, "TA")
	defer nc.GracefulStop()
	sent := map[string]string{}
	for i := 0; i < 10; i++ {
		m := &rmq.Message{Topic: normal, Body: []byte("m" + strconv.Itoa(i))}
		m.SetTag(map[bool]string{true: "TA", false: "TB"}[i%2 == 0])
		m.SetKeys("k" + strconv.Itoa(i))
		m.AddProperty("n", strconv.Itoa(i))
		receipts, err := p.Send(context.TODO(), m)
		must(err, "send")
		sent[string(m.Body)] = receipts[0].MessageID
	}
	gotNormal := receiveAll(nc, 5, sent)
	after, _ := nc.Receive(context.TODO(), 16, 20*time.Second)

	fc := consumer(endpoints, fifo+"-g", fifo, "*")
	defer fc.GracefulStop()
	for i := 0; i < 10; i++ {
		m := &rmq.Message{Topic: fifo, Body: []byte(strconv.Itoa(i))}
		m.SetMessageGroup("order-1")
		receipts, err := p.Send(context.TODO(), m)
		must(err, "send fifo")
		sent[string(m.Body)] = receipts[0].MessageID
	}
	gotFifo := receiveAll(fc, 10, sent)

	out, _ := json.Marshal(map[string]any{"normal": gotNormal, "after_ack": len(after), "fifo": gotFifo})
	fmt.Println(string(out))
}
