"""Classic-group churn with kafka-python (run by hand, not a test: ~1 min a round at worst):
`python tests/kafka/group_churn.py ROUNDS [BOOTSTRAP]` (no bootstrap: a fresh gateway). Per round
three consumers share a 4-partition topic, one is replaced at random; every sample checks that no
partition is held by two consumers reporting the same generation, and the round ends when the
assignment is balanced. Prints each round's time and the overlaps seen (real Kafka 4.3: 0 and ~5 s)."""
import sys, time, uuid, random
import os
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gateway_process import GatewayProcess
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
import tempfile
g = None if len(sys.argv) > 2 else GatewayProcess(tempfile.mkdtemp() + "/data").start()
bs = sys.argv[2] if g is None else g.kafka_bootstrap
adm = AdminClient({"bootstrap.servers": bs})
bad = 0
for rnd in range(int(sys.argv[1])):
    topic = "t-" + uuid.uuid4().hex[:6]
    adm.create_topics([NewTopic(topic, 4, 1)])[topic].result(10)
    common = dict(bootstrap_servers=bs, group_id="grp" + topic, heartbeat_interval_ms=500, enable_auto_commit=False)
    cs = [KafkaConsumer(topic, **common) for _ in range(3)]
    t0 = time.monotonic(); ok = False
    while time.monotonic() - t0 < 60:
        for c in cs: c.poll(100)
        gens = {}
        for i, c in enumerate(cs):
            gen = c._coordinator._generation.generation_id if c._coordinator._generation else -1
            for tp in c.assignment():
                gens.setdefault(tp.partition, []).append((i, gen))
        for p, owners in gens.items():
            if len(owners) > 1 and len({gen for _i, gen in owners}) == 1:
                print("OVERLAP", rnd, p, owners, flush=True); bad += 1
        if random.random() < 0.05:
            i = random.randrange(len(cs)); cs[i].close(); cs[i] = KafkaConsumer(topic, **common)
        sizes = sorted(len(c.assignment()) for c in cs)
        if sizes == [1, 1, 2] and sorted(tp.partition for c in cs for tp in c.assignment()) == [0, 1, 2, 3] and time.monotonic() - t0 > 5:
            ok = True; break
    print(rnd, "ok" if ok else "TIMEOUT", round(time.monotonic() - t0, 1), flush=True)
    for c in cs: c.close()
if g is not None:
    g.stop()
print("overlaps", bad)
