"""KIP-1071 topologies resolved against the topics that exist (`configure`): the task count of every
subtopology and the partition count and configs of every internal topic, as Kafka's streams group
coordinator configures them (its rules are in `semantics.kafka_streams_groups`' docstring)."""
from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass
class Configured:
    """A topology resolved against the existing topics."""
    tasks: dict  # subtopology id -> task count
    sub_topics: dict  # subtopology id -> source and repartition source topics
    internal: dict  # internal topic -> (partitions, configs)
    missing: list  # source topics that do not exist


def configure(topology: dict, partition_count, topic_names) -> Configured:
    """Partition counts of every topic of the topology and the task count of every subtopology."""
    subs = topology["subtopologies"]
    counts, missing, sub_topics = {}, [], {}
    for s in subs:
        names = list(s["source_topics"])
        for rx in s["source_topic_regex"]:
            try:
                names += [t for t in topic_names() if re.fullmatch(rx, t)]
            except re.error:
                continue
        for t in names:
            n = partition_count(t)
            if n > 0:
                counts[t] = n
            elif t not in missing:
                missing.append(t)
        sub_topics[s["subtopology_id"]] = names + [ti["name"] for ti in s["repartition_source_topics"]]
    fixed = {ti["name"]: ti["partitions"] for s in subs for ti in s["repartition_source_topics"]
             if ti["partitions"] > 0}
    counts.update(fixed)
    repartition = {ti["name"] for s in subs for ti in s["repartition_source_topics"]}

    def raise_to(name: str, n: int) -> bool:
        if name in repartition and name not in fixed and counts.get(name, 0) < n:
            counts[name] = n
            return True
        return False

    changed = True
    while changed:  # counts only grow, so this ends
        changed = False
        for s in subs:
            n = max((counts.get(t, 0) for t in sub_topics[s["subtopology_id"]]), default=0)
            for t in s["repartition_sink_topics"]:
                changed |= raise_to(t, n)
            for cg in s["copartition_groups"]:
                names = [s["source_topics"][i] for i in cg["source_topics"]]
                names += [s["repartition_source_topics"][i]["name"] for i in cg["repartition_source_topics"]]
                top = max((counts.get(t, 0) for t in names), default=0)
                for t in names:
                    changed |= raise_to(t, top)
    tasks = {sid: max((counts.get(t, 0) for t in names), default=0) for sid, names in sub_topics.items()}
    internal = {}
    for s in subs:
        for ti in s["repartition_source_topics"]:
            internal[ti["name"]] = (counts.get(ti["name"], 0), _configs(ti))
        for ti in s["state_changelog_topics"]:
            internal[ti["name"]] = (ti["partitions"] or tasks[s["subtopology_id"]], _configs(ti))
    return Configured(tasks, sub_topics, internal, missing)


def _configs(topic_info: dict) -> dict:
    return {kv["key"]: kv["value"] for kv in topic_info["topic_configs"]}
