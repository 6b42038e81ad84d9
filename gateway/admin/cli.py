"""The admin command line: `python -m gateway.admin [--json] [--bootstrap ...] NOUN VERB ...`."""
from __future__ import annotations

import argparse
import os
import sys

import gateway.admin.commands as commands
import gateway.cluster.admin as cluster_admin
import gateway.admin.store_cli as store_cli
from gateway.admin.endpoints import SECURITY_PROTOCOLS, AdminError
from gateway.admin.output import emit


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit code 2."""

    def error(self, message: str) -> None:  # noqa: D401 - argparse hook
        sys.stderr.write(f"rocketgate: error: {message}\n")
        raise SystemExit(2)


def _command(sub, name: str, fn, help: str) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help, description=help)
    p.set_defaults(fn=fn)
    return p


def _security_options(p: argparse.ArgumentParser, env) -> None:
    """Credentials for a secured gateway (docs/admin.md, "A secured gateway")."""
    g = p.add_argument_group("a secured gateway (docs/security.md)")
    g.add_argument("--security-protocol", type=str.upper, choices=SECURITY_PROTOCOLS,
                   default=env("ROCKETGATE_SECURITY_PROTOCOL"),
                   help="of the Kafka listener (default: SASL_SSL/SASL_PLAINTEXT with --sasl-username, "
                        "SSL with --tls-ca, else PLAINTEXT)")
    g.add_argument("--sasl-mechanism", default=env("ROCKETGATE_SASL_MECHANISM", "SCRAM-SHA-256"),
                   choices=["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
    g.add_argument("--sasl-username", default=env("ROCKETGATE_SASL_USERNAME"))
    g.add_argument("--sasl-password", default=env("ROCKETGATE_SASL_PASSWORD"),
                   help="better given as ROCKETGATE_SASL_PASSWORD (a flag shows in ps)")
    g.add_argument("--tls-ca", default=env("ROCKETGATE_TLS_CA"), help="PEM CA that signed the gateway's certificate")
    g.add_argument("--tls-cert", default=env("ROCKETGATE_TLS_CERT"), help="PEM client certificate (mTLS)")
    g.add_argument("--tls-key", default=env("ROCKETGATE_TLS_KEY"), help="PEM key of --tls-cert")
    g.add_argument("--access-key", default=env("ROCKETGATE_ACCESS_KEY"),
                   help="RocketMQ access key that signs remoting requests")
    g.add_argument("--secret-key", default=env("ROCKETGATE_SECRET_KEY"),
                   help="its secret; better given as ROCKETGATE_SECRET_KEY")
    g.add_argument("--remoting-tls", action="store_true", default=bool(env("ROCKETGATE_REMOTING_TLS")),
                   help="the remoting listener speaks TLS (the gateway's --remoting-tls)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rocketgate", description="Operate a running rocketgate gateway (docs/admin.md).")
    env = os.environ.get
    p.add_argument("--bootstrap", default=env("ROCKETGATE_BOOTSTRAP", "127.0.0.1:9092"),
                   help="the gateway's Kafka listener (env ROCKETGATE_BOOTSTRAP)")
    p.add_argument("--remoting", default=env("ROCKETGATE_REMOTING", "127.0.0.1:9876"),
                   help="the gateway's remoting listener (env ROCKETGATE_REMOTING)")
    p.add_argument("--http", default=env("ROCKETGATE_HTTP"),
                   help="the gateway's HTTP port, HOST:PORT (its --http-port; env ROCKETGATE_HTTP)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    _security_options(p, env)
    nouns = p.add_subparsers(dest="noun", required=True, parser_class=_Parser)

    topics = nouns.add_parser("topics", help="list, create, delete, describe topics").add_subparsers(
        dest="verb", required=True, parser_class=_Parser)
    _command(topics, "list", commands.topics_list, "list topics").add_argument(
        "--all", action="store_true", help="also the gateway's system topics")
    create = _command(topics, "create", commands.topics_create, "create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=4)
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a topic config, e.g. filter.source.topic=orders (repeatable)")
    _command(topics, "delete", commands.topics_delete, "delete a topic").add_argument("topic")
    _command(topics, "describe", commands.topics_describe, "partitions with first/end offsets").add_argument("topic")

    groups = nouns.add_parser("groups", help="consumer groups of both protocols (needs --http)").add_subparsers(
        dest="verb", required=True, parser_class=_Parser)
    _command(groups, "list", commands.groups_list, "every group with its total lag")
    _command(groups, "describe", commands.groups_describe, "committed offset and lag per queue").add_argument("group")

    offsets = nouns.add_parser("offsets", help="reset a group's offsets").add_subparsers(
        dest="verb", required=True, parser_class=_Parser)
    reset = _command(offsets, "reset", commands.offsets_reset,
                     "reset a group's offsets on a topic (the group must have no live Kafka members)")
    reset.add_argument("group")
    reset.add_argument("topic")
    reset.add_argument("--to", required=True, help="earliest, latest, epoch ms or an ISO time")

    query = nouns.add_parser("query", help="find messages (needs --http)").add_subparsers(
        dest="verb", required=True, parser_class=_Parser)
    by_key = _command(query, "key", commands.query_key, "messages of a topic by key (the index)")
    by_key.add_argument("topic")
    by_key.add_argument("key")
    _command(query, "msgid", commands.query_msgid, "one message by its offsetMsgId").add_argument("msg_id")

    schemas = nouns.add_parser("schemas", help="the schema registry (needs --http)").add_subparsers(
        dest="verb", required=True, parser_class=_Parser)
    _command(schemas, "subjects", commands.schemas_subjects, "subjects with their versions, latest id and level")
    _command(schemas, "topics", commands.schemas_topics, "topics that validate records against the registry")

    dlq = nouns.add_parser("dlq", help="dead letters of a group").add_subparsers(
        dest="verb", required=True, parser_class=_Parser)
    listing = _command(dlq, "list", commands.dlq_list, "a group's dead letters (needs --http)")
    listing.add_argument("group")
    listing.add_argument("--start", type=int, default=0, help="first DLQ offset")
    listing.add_argument("--limit", type=int, default=100)
    resend = _command(dlq, "resend", commands.dlq_resend,
                      "put dead letters back on their original topic (--all needs --http)")
    resend.add_argument("group")
    which = resend.add_mutually_exclusive_group(required=True)
    which.add_argument("--msg-id", help="the dead letter's offsetMsgId")
    which.add_argument("--all", action="store_true", help="every dead letter of the group")
    cluster_admin.add_commands(nouns, _command, _Parser, env)
    store_cli.add_commands(nouns, _command, _Parser)
    return p


def main(argv: list[str] | None = None) -> int:
    """The exit code (the `rocketgate` console script exits with it)."""
    args = parser().parse_args(argv)
    if getattr(args, "store", False):  # the offline store tool prints and exits on its own
        return args.fn(args)
    try:
        result, columns = args.fn(args)
    except AdminError as exc:
        sys.stderr.write(f"rocketgate: error: {exc}\n")
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("rocketgate: interrupted\n")
        return 130
    emit(result, args.json, columns)
    return 0
