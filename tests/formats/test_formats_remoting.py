"""RemotingCommand frames: the construct definitions (codec.formats.remoting) and the hot path
(codec.remoting.command) agree on JSON and ROCKETMQ-binary frames, both directions."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codec.formats.remoting import Frame
from codec.remoting import command as C
from codec.remoting.codes import LANGUAGES
from format_strategies import blobs, i16, i32, text

commands = st.builds(
    C.RemotingCommand, code=i16, ext_fields=st.dictionaries(text, text, max_size=5), body=blobs, opaque=i32,
    flag=st.integers(0, 3), remark=st.none() | text.filter(bool), language=st.sampled_from(LANGUAGES[:7]),
    version=i16, serialize_type=st.sampled_from([C.JSON, C.ROCKETMQ]))


def _fields(cmd):
    return (cmd.code, cmd.ext_fields, cmd.body, cmd.opaque, cmd.flag, cmd.remark, cmd.language, cmd.version,
            cmd.serialize_type)


@settings(deadline=None)
@given(cmd=commands)
def test_hot_path_frame_parses_with_the_definition(cmd):
    raw = C.encode(cmd)
    p = Frame.parse(raw)
    h = p.header
    assert (p.serialize_type, p.body) == (cmd.serialize_type, cmd.body)
    if cmd.serialize_type == C.JSON:
        assert (h["code"], h["extFields"], h["opaque"], h["flag"], h.get("remark"), h["language"], h["version"]) == (
            cmd.code, cmd.ext_fields, cmd.opaque, cmd.flag, cmd.remark, cmd.language, cmd.version)
    else:
        assert (h.code, dict((f.key, f.value) for f in h.ext_fields), h.opaque, h.flag, h.remark or None,
                LANGUAGES[h.language], h.version) == (cmd.code, cmd.ext_fields, cmd.opaque, cmd.flag, cmd.remark,
                                                      cmd.language, cmd.version)
    assert Frame.build(p) == raw


@settings(deadline=None)
@given(cmd=commands)
def test_definition_built_frame_decodes_on_the_hot_path(cmd):
    if cmd.serialize_type == C.JSON:
        header = {"code": cmd.code, "extFields": cmd.ext_fields, "flag": cmd.flag, "language": cmd.language,
                  "opaque": cmd.opaque, "serializeTypeCurrentRPC": "JSON", "version": cmd.version}
        if cmd.remark is not None:
            header["remark"] = cmd.remark
    else:
        header = dict(code=cmd.code, language=LANGUAGES.index(cmd.language), version=cmd.version, opaque=cmd.opaque,
                      flag=cmd.flag, remark=cmd.remark or "",
                      ext_fields=[dict(key=k, value=v) for k, v in cmd.ext_fields.items()])
    raw = Frame.build(dict(serialize_type=cmd.serialize_type, header=header, body=cmd.body))
    (length,) = C._I32.unpack_from(raw, 0)
    assert length == len(raw) - 4
    assert _fields(C.decode_frame(raw, 4)) == _fields(cmd)
    assert C.encode(cmd) == raw
