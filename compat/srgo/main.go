// Command srgo drives franz-go's schema registry client and serde (github.com/twmb/franz-go/pkg/sr,
// pinned in go.mod) against the gateway for tests/schema_registry/test_sr_go_client.py and prints one
// JSON line of what each call answered; the test asserts the exact values.
//
//	srgo REGISTRY_URL BOOTSTRAP PREFIX
//
// Registry calls: register (CreateSchema, RegisterSchema), subjects, versions, lookup, schema by id and
// by version, compatibility checks (verbose), subject and global compatibility levels, a subject with a
// '/', soft and hard deletes of a version and of a subject. Then a round trip: five User records encoded
// by sr.Serde (Avro by hamba/avro, Confluent's 5-byte header) produced with kgo to PREFIX, consumed back
// and decoded by a second Serde that knows the schema only by the id fetched from the registry.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

const userV1 = `{"type":"record","name":"User","namespace":"t","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}`
const userV2 = `{"type":"record","name":"User","namespace":"t","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"},{"name":"email","type":["null","string"],"default":null}]}`
const userBroken = `{"type":"record","name":"User","namespace":"t","fields":[{"name":"id","type":"long"}]}`

// User is the Go form of userV2.
type User struct {
	Name  string  `avro:"name" json:"name"`
	Age   int     `avro:"age" json:"age"`
	Email *string `avro:"email" json:"email"`
}

var ctx = context.Background()

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

// code is the Confluent error_code of a registry refusal (0: none, -1: not a registry answer).
func code(err error) int {
	if err == nil {
		return 0
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	fmt.Fprintf(os.Stderr, "not a registry answer: %v\n", err)
	return -1
}

func registry(cl *sr.Client, subject, slashed string) map[string]any {
	out := map[string]any{}
	first, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: userV1})
	must(err, "create v1")
	out["v1"] = []int{first.ID, first.Version}
	again, err := cl.RegisterSchema(ctx, subject, sr.Schema{Schema: userV1}, -1, -1)
	must(err, "register v1 again")
	out["v1_again"] = again
	compatible, err := cl.CheckCompatibility(ctx, subject, -1, sr.Schema{Schema: userV2})
	must(err, "check v2")
	broken, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), subject, -1, sr.Schema{Schema: userBroken})
	must(err, "check broken")
	out["compatible_v2"], out["compatible_broken"] = compatible.Is, broken.Is
	out["broken_messages"] = len(broken.Messages)
	_, err = cl.CreateSchema(ctx, subject, sr.Schema{Schema: userBroken})
	out["register_broken_code"] = code(err)
	second, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: userV2})
	must(err, "create v2")
	out["v2"] = []int{second.ID, second.Version}
	found, err := cl.LookupSchema(ctx, subject, sr.Schema{Schema: userV1})
	must(err, "lookup v1")
	out["lookup_v1"] = []int{found.ID, found.Version}
	latest, err := cl.SchemaByVersion(ctx, subject, -1)
	must(err, "latest")
	out["latest"] = []any{latest.Subject, latest.ID, latest.Version}
	byID, err := cl.SchemaByID(ctx, second.ID)
	must(err, "schema by id")
	out["by_id_schema"] = byID.Schema
	versions, err := cl.SubjectVersions(ctx, subject)
	must(err, "versions")
	out["versions"] = versions
	usages, err := cl.SchemaUsagesByID(ctx, first.ID)
	must(err, "usages")
	var used []string
	for _, u := range usages {
		used = append(used, fmt.Sprintf("%s/%d", u.Subject, u.Version))
	}
	out["usages_v1"] = used
	_, err = cl.SchemaByID(ctx, 999999)
	out["missing_id_code"] = code(err)

	set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, subject)
	must(set[0].Err, "set compatibility")
	got := cl.Compatibility(ctx, subject)
	must(got[0].Err, "compatibility")
	global := cl.Compatibility(ctx)
	must(global[0].Err, "global compatibility")
	out["set_level"], out["subject_level"], out["global_level"] = set[0].Level.String(), got[0].Level.String(),
		global[0].Level.String()
	reset := cl.ResetCompatibility(ctx, subject)
	must(reset[0].Err, "reset compatibility")
	out["reset_level"] = reset[0].Level.String()
	out["after_reset_code"] = code(cl.Compatibility(ctx, subject)[0].Err)

	onSlash, err := cl.CreateSchema(ctx, slashed, sr.Schema{Schema: userV1})
	must(err, "create under a subject with '/'")
	out["slashed"] = []int{onSlash.ID, onSlash.Version}
	slashedVersions, err := cl.SubjectVersions(ctx, slashed)
	must(err, "versions of the subject with '/'")
	out["slashed_versions"] = slashedVersions
	return out
}

func deletes(cl *sr.Client, subject, slashed string) map[string]any {
	out := map[string]any{}
	must(cl.DeleteSchema(ctx, slashed, 1, sr.SoftDelete), "soft delete a version")
	_, err := cl.SubjectVersions(ctx, slashed)
	out["after_soft_version_code"] = code(err)
	shown, err := cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), slashed)
	must(err, "versions with deleted")
	out["soft_deleted_versions"] = shown
	out["soft_again_code"] = code(cl.DeleteSchema(ctx, slashed, 1, sr.SoftDelete))
	must(cl.DeleteSchema(ctx, slashed, 1, sr.HardDelete), "hard delete a version")
	_, err = cl.SubjectVersions(sr.WithParams(ctx, sr.ShowDeleted), slashed)
	out["after_hard_version_code"] = code(err)

	_, err = cl.DeleteSubject(ctx, subject, sr.HardDelete)
	out["hard_before_soft_code"] = code(err)
	soft, err := cl.DeleteSubject(ctx, subject, sr.SoftDelete)
	must(err, "soft delete subject")
	out["soft_subject"] = soft
	subjects, err := cl.Subjects(ctx)
	must(err, "subjects")
	withDeleted, err := cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted))
	must(err, "subjects with deleted")
	sort.Strings(subjects)
	sort.Strings(withDeleted)
	out["subjects_after_soft"], out["subjects_with_deleted"] = subjects, withDeleted
	hard, err := cl.DeleteSubject(ctx, subject, sr.HardDelete)
	must(err, "hard delete subject")
	out["hard_subject"] = hard
	withDeleted, err = cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted))
	must(err, "subjects after hard delete")
	out["subjects_after_hard"] = withDeleted
	return out
}

// roundTrip produces five records framed by a Serde and decodes them with a Serde built from the
// registry's answer for the id in the first frame.
func roundTrip(cl *sr.Client, bootstrap, topic string, id int) map[string]any {
	out := map[string]any{}
	schemaV2, err := avro.Parse(userV2)
	must(err, "parse v2")
	var encoder sr.Serde
	encoder.Register(id, User{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schemaV2, v) }))
	producer, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation())
	must(err, "producer")
	defer producer.Close()
	for i := 0; i < 5; i++ {
		email := fmt.Sprintf("u%d@example.com", i)
		user := User{Name: fmt.Sprintf("n%d", i), Age: 20 + i}
		if i%2 == 0 {
			user.Email = &email
		}
		value, err := encoder.Encode(user)
		must(err, "encode")
		must(producer.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(), "produce")
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	must(err, "consumer")
	defer consumer.Close()
	var values [][]byte
	deadline := time.Now().Add(30 * time.Second)
	for len(values) < 5 && time.Now().Before(deadline) {
		pollCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fetches := consumer.PollFetches(pollCtx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) { values = append(values, r.Value) })
	}
	var decoder sr.Serde
	var ids []int
	var decoded []User
	for _, value := range values {
		frameID, _, err := decoder.DecodeID(value)
		must(err, "frame")
		ids = append(ids, frameID)
		if len(ids) == 1 { // the reader knows nothing but the id: the registry has the schema
			fetched, err := cl.SchemaByID(ctx, frameID)
			must(err, "schema of the frame's id")
			schema, err := avro.Parse(fetched.Schema)
			must(err, "parse fetched schema")
			decoder.Register(frameID, User{}, sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
		}
		var user User
		must(decoder.Decode(value, &user), "decode")
		decoded = append(decoded, user)
	}
	sort.Slice(decoded, func(i, j int) bool { return decoded[i].Age < decoded[j].Age })
	out["decoded"], out["frame_ids"] = decoded, ids
	if len(values) > 0 {
		out["first_header"] = []any{int(values[0][0]), int(binary.BigEndian.Uint32(values[0][1:5]))}
	}
	return out
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: srgo REGISTRY_URL BOOTSTRAP PREFIX")
		os.Exit(2)
	}
	url, bootstrap, prefix := os.Args[1], os.Args[2], os.Args[3]
	cl, err := sr.NewClient(sr.URLs(url))
	must(err, "client")
	subject, slashed := prefix+"-value", "ns/"+prefix+"-value"
	result := map[string]any{"registry": registry(cl, subject, slashed)}
	v2, err := cl.SchemaByVersion(ctx, subject, 2)
	must(err, "v2")
	result["round_trip"] = roundTrip(cl, bootstrap, prefix, v2.ID)
	result["deletes"] = deletes(cl, subject, slashed)
	line, err := json.Marshal(result)
	must(err, "json")
	fmt.Println(string(line))
}
