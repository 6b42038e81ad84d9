"""Topics: the list with sizes and current rates, and a topic's page: produce/consume rates and
messages stored over the last hour (the history ring), queues, configs with their defaults; an
admin edits configs (the IncrementalAlterConfigs path, same validation), creates and deletes topics."""
from __future__ import annotations

from starlette.routing import Route

import gateway.ops.actions as actions
from gateway.kafka.configs import DELETE, SET, _alter_topic
from gateway.ops.html import chart_lines, esc, link, post_form, q, rate, table
from semantics import topic_configs as tc
from gateway.kafka.metadata import is_internal


def routes(console) -> list[Route]:
    app = console.app

    async def topics(request):
        if request.method == "POST":
            async def create(f):
                done = actions.create_topic(app, f.get("name", ""), f.get("queues", "4"))
                await app.topics_written()
                return done
            return await console.change(request, "Topics", "/topics", create)
        listed = (await console.shards("topics")).topics()
        for row in listed:
            row["produce"], row["consume"] = rate(row["bytes_in"]), rate(row["bytes_out"])
            row["msg_in"] = rate(row["msg_in"], "msg")
        rows, nav = console.paged(request, listed, "/topics")
        user = console.admin(request)
        admin = post_form("/topics", [("name", "new topic", ""), ("queues", "queues", 4)], "Create",
                          actions.csrf_token(user)) if user else console.admin_note(request, "create topics")
        return console.html("Topics", "/topics", admin + nav + table(
            rows, ["topic", "read_queues", "write_queues", "perm", "messages", "msg_in", "produce", "consume", "view"],
            links={"topic": lambda r: f"/topics/{q(r['topic'])}"}, numeric=("read_queues", "write_queues", "messages")))

    async def topic(request):
        name = request.path_params["name"]
        if request.method == "POST":
            return await console.change(request, f"Topic {name}", "/topics", lambda f: _topic_change(app, name, f))
        cfg = app.store.topics.get(name)
        if cfg is None:
            return console.not_found("/topics", f"No topic {name}.")
        series = (f"rates:bytes_in:{name}", f"rates:bytes_out:{name}", f"rates:in:{name}", f"points:stored:{name}")
        shards = await console.shards("topics", series=series)
        merged = shards.topic(name)
        queues = [{**r, "browse": "messages"} for r in (merged["queues"] if merged else [])]
        sharded = len(shards.parts) > 1
        body = '<h2>Last hour</h2><div class="charts">'
        for one, label, fmt in zip(series, ("Produced", "Consumed", "Messages in", "Messages stored"),
                                   (rate, rate, lambda v: rate(v, "msg"), lambda v: f"{v:,.0f}")):
            body += chart_lines(shards.lines(one), label, fmt)
        body += "</div>"
        body += "<h2>Queues</h2>" + table(queues, ["queue", *(["shard"] if sharded else []), "first", "end",
                                                   "messages", "browse"], numeric=("first", "end", "messages"),
                                          links={"browse": lambda r: console.shard_url(request, r.get("shard", 0)) +
                                                 f"/messages?topic={q(name)}&queue={r['queue']}&offset={r['first']}"})
        body += f"<p>perm {esc(cfg.perm)}; {'a filtered view' if app.views.is_view(name) else 'a topic'}</p>"
        body += "<h2>Configs</h2>" + table(_config_rows(app, cfg), ["config", "value", "source"])
        user = console.admin(request)
        if user:
            token = actions.csrf_token(user)
            body += "<h2>Change</h2>" + post_form(f"/topics/{q(name)}", [
                ("config", "config", "retention.ms"), ("value", "value (empty: back to the default)", "")],
                "Set config", token)
            if not is_internal(name):
                body += post_form(f"/topics/{q(name)}", [("delete", "type the topic's name to delete it", "")],
                                  "Delete topic", token)
        else:
            body += console.admin_note(request, "change configs or delete the topic")
        return console.html(f"Topic {name}", "/topics", body)

    both = ["GET", "POST"]
    return [Route("/topics", topics, methods=both), Route("/topics/{name:path}", topic, methods=both)]


def _config_rows(app, cfg) -> list[dict]:
    """Every Kafka topic config (set ones first) and the RocketMQ attributes the topic carries."""
    attrs = dict(cfg.attributes or {})
    defaults = tc.defaults(app.config.max_message_bytes, app.config.commitlog_file_size)
    rows = [{"config": k, "value": v, "source": "topic"} for k, v in sorted(attrs.items())]
    rows += [{"config": k, "value": v[0], "source": "default"} for k, v in sorted(defaults.items()) if k not in attrs]
    return rows


async def _topic_change(app, name: str, form: dict) -> str:
    """A config set or reset, or the topic deleted (its name typed again)."""
    if app.store.topics.get(name) is None:
        raise actions.Refused(f"no topic {name}")
    if "delete" in form:
        if form["delete"] != name:
            raise actions.Refused("type the topic's name to delete it")
        if is_internal(name):
            raise actions.Refused(f"{name} is an internal topic")
        app.store.topics.delete(name)
        app.kafka.producers.forget_topic(name)
        app.views.refresh()
        await app.topics_written()
        return f"deleted topic {name}"
    key, value = form.get("config", "").strip(), form.get("value", "")
    op = (key, SET, value) if value != "" else (key, DELETE, None)
    code, why = _alter_topic(app, name, [op], False, False)
    if code:
        raise actions.Refused(why or f"refused (error {code})")
    await app.topics_written()
    return f"set {key}={value} on {name}" if value != "" else f"{key} of {name} is back to its default"
