"""The per-kind JSON Schema comparisons of jsonschema_compat (object, array, string, number, ...).

Each comparer gets the context, the generic `compare` (for subschemas) and both schemas; it adds
Confluent's difference types with their JSON paths. Kept apart from the dispatcher for size only.
"""
from __future__ import annotations

import json
import re


def _bound(ctx, word, before, after, names, larger_is="INCREASED", smaller_is="DECREASED"):
    """A numeric limit: *_ADDED, *_REMOVED, *_INCREASED or *_DECREASED at its keyword."""
    if before == after or isinstance(before, bool) or isinstance(after, bool):
        return
    if before is None:
        ctx.add(f"{names}_ADDED", word)
    elif after is None:
        ctx.add(f"{names}_REMOVED", word)
    elif isinstance(before, (int, float)) and isinstance(after, (int, float)):
        ctx.add(f"{names}_{larger_is if after > before else smaller_is}", word)


def _schema_of(value):
    """additionalProperties / additionalItems: (permits, schema or None)."""
    if value is False:
        return False, None
    if value is None or value is True:
        return True, None
    return True, value


def _has_default(schema):
    return isinstance(schema, dict) and "default" in schema


# -- object ---------------------------------------------------------------------------------------

def _open(schema):
    permits, additional = _schema_of(schema.get("additionalProperties"))
    return permits and additional is None and not schema.get("patternProperties")


def _partial(schema, name):
    for pattern, subschema in (schema.get("patternProperties") or {}).items():
        try:
            if re.search(pattern, name):
                return subschema
        except re.error:
            continue
    return _schema_of(schema.get("additionalProperties"))[1]


def _is_empty(schema):
    return schema is True or schema == {}


def compare_object(ctx, compare, original, update, _o, _u):
    before_props = original.get("properties") or {}
    after_props = update.get("properties") or {}
    before_required = set(original.get("required") or [])
    after_required = set(update.get("required") or [])
    for name in before_props:
        if name in after_props:
            if name in before_required and name not in after_required:
                ctx.add("REQUIRED_ATTRIBUTE_REMOVED", "required", name)
            elif name not in before_required and name in after_required:
                ctx.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if _has_default(after_props[name])
                        else "REQUIRED_ATTRIBUTE_ADDED", "required", name)
    for name in sorted(before_props.keys() | after_props.keys()):
        with ctx.at("properties", name):
            _compare_property(ctx, compare, original, update, name, before_props.get(name),
                              after_props.get(name), name in after_required)
    _compare_dependencies(ctx, compare, original, update)
    with ctx.at("additionalProperties"):
        before_permits, before_schema = _schema_of(original.get("additionalProperties"))
        after_permits, after_schema = _schema_of(update.get("additionalProperties"))
        if before_permits != after_permits:
            ctx.add("ADDITIONAL_PROPERTIES_ADDED" if after_permits else "ADDITIONAL_PROPERTIES_REMOVED")
        elif before_schema is None and after_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_NARROWED")
        elif after_schema is None and before_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_EXTENDED")
        elif before_schema is not None:
            compare(ctx, before_schema, after_schema)
    _bound(ctx, "maxProperties", original.get("maxProperties"), update.get("maxProperties"), "MAX_PROPERTIES")
    _bound(ctx, "minProperties", original.get("minProperties"), update.get("minProperties"), "MIN_PROPERTIES")


def _compare_property(ctx, compare, original, update, name, before, after, required_after):
    if after is None:
        if _open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            return
        partial = _partial(update, name)
        if partial is not None:
            sub = ctx.sub()
            compare(sub, before, partial)
            ctx.found.extend(sub.found)
            ctx.add("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible()
                    else "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
        else:
            ctx.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL" if before is False
                    else "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    elif before is None:
        if _open(original):
            ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL" if _is_empty(after)
                    else "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            return
        partial = _partial(original, name)
        if partial is not None:
            sub = ctx.sub()
            compare(sub, partial, after)
            ctx.found.extend(sub.found)
            ctx.add("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible()
                    else "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
        if required_after:
            ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL" if _has_default(after)
                    else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
    else:
        compare(ctx, before, after)


def _dependencies(schema):
    arrays = dict(schema.get("dependentRequired") or {})
    schemas = dict(schema.get("dependentSchemas") or {})
    for name, value in (schema.get("dependencies") or {}).items():
        (arrays if isinstance(value, list) else schemas)[name] = value
    return arrays, schemas


def _compare_dependencies(ctx, compare, original, update):
    before_arrays, before_schemas = _dependencies(original)
    after_arrays, after_schemas = _dependencies(update)
    for name in sorted(before_arrays.keys() | after_arrays.keys()):
        before, after = before_arrays.get(name), after_arrays.get(name)
        if after is None:
            ctx.add("DEPENDENCY_ARRAY_REMOVED", "dependencies", name)
        elif before is None:
            ctx.add("DEPENDENCY_ARRAY_ADDED", "dependencies", name)
        elif set(before) != set(after):
            kind = ("DEPENDENCY_ARRAY_EXTENDED" if set(after) >= set(before) else
                    "DEPENDENCY_ARRAY_NARROWED" if set(before) >= set(after) else "DEPENDENCY_ARRAY_CHANGED")
            ctx.add(kind, "dependencies", name)
    for name in sorted(before_schemas.keys() | after_schemas.keys()):
        before, after = before_schemas.get(name), after_schemas.get(name)
        with ctx.at("dependencies", name):
            if after is None:
                ctx.add("DEPENDENCY_SCHEMA_REMOVED")
            elif before is None:
                ctx.add("DEPENDENCY_SCHEMA_ADDED")
            else:
                compare(ctx, before, after)


# -- array ----------------------------------------------------------------------------------------

def _array_parts(schema):
    """(schema for all items, tuple item schemas, additionalItems value) across drafts."""
    if "prefixItems" in schema:
        return None, list(schema.get("prefixItems") or []), schema.get("items")
    items = schema.get("items")
    if isinstance(items, list):
        return None, items, schema.get("additionalItems")
    return items, [], schema.get("additionalItems")


def compare_array(ctx, compare, original, update, _o, _u):
    before_all, before_items, before_additional = _array_parts(original)
    after_all, after_items, after_additional = _array_parts(update)
    with ctx.at("items"):
        compare(ctx, before_all, after_all)
    before_permits, before_schema = _schema_of(before_additional)
    after_permits, after_schema = _schema_of(after_additional)
    for index in range(max(len(before_items), len(after_items))):
        with ctx.at(f"items/{index}"):
            if index < len(before_items) and index < len(after_items):
                compare(ctx, before_items[index], after_items[index])
            elif index < len(before_items):
                _item_removed(ctx, compare, before_items[index], after_permits, after_schema)
            else:
                _item_added(ctx, compare, after_items[index], before_permits, before_schema)
    with ctx.at("additionalItems"):
        if before_permits != after_permits:
            ctx.add("ADDITIONAL_ITEMS_REMOVED" if before_permits else "ADDITIONAL_ITEMS_ADDED")
        elif before_schema is None and after_schema is not None:
            ctx.add("ADDITIONAL_ITEMS_NARROWED")
        elif after_schema is None and before_schema is not None:
            ctx.add("ADDITIONAL_ITEMS_EXTENDED")
        elif before_schema is not None:
            compare(ctx, before_schema, after_schema)
    _bound(ctx, "maxItems", original.get("maxItems"), update.get("maxItems"), "MAX_ITEMS")
    _bound(ctx, "minItems", original.get("minItems"), update.get("minItems"), "MIN_ITEMS")
    if bool(original.get("uniqueItems")) != bool(update.get("uniqueItems")):
        ctx.add("UNIQUE_ITEMS_REMOVED" if original.get("uniqueItems") else "UNIQUE_ITEMS_ADDED", "uniqueItems")


def _item_removed(ctx, compare, before, permits, additional):
    if permits and additional is None:
        ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
    elif additional is not None:
        sub = ctx.sub()
        compare(sub, before, additional)
        ctx.found.extend(sub.found)
        ctx.add("ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible()
                else "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
    else:
        ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL" if before is False
                else "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")


def _item_added(ctx, compare, after, permits, additional):
    if permits and additional is None:
        ctx.add("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL" if _is_empty(after)
                else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
    elif additional is not None:
        sub = ctx.sub()
        compare(sub, additional, after)
        ctx.found.extend(sub.found)
        ctx.add("ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible()
                else "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
    else:
        ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")


# -- scalars, enum, const, not --------------------------------------------------------------------

def compare_string(ctx, compare, original, update, _o, _u):
    _bound(ctx, "maxLength", original.get("maxLength"), update.get("maxLength"), "MAX_LENGTH")
    _bound(ctx, "minLength", original.get("minLength"), update.get("minLength"), "MIN_LENGTH")
    before, after = original.get("pattern"), update.get("pattern")
    if before != after:
        ctx.add("PATTERN_ADDED" if before is None else "PATTERN_REMOVED" if after is None else "PATTERN_CHANGED",
                "pattern")


def _limit(schema, word, exclusive_word):
    """(inclusive limit, exclusive limit), draft 4's boolean exclusiveMaximum/Minimum folded in."""
    value, exclusive = schema.get(word), schema.get(exclusive_word)
    if exclusive is True:
        return None, value
    return value, exclusive if not isinstance(exclusive, bool) else None


def compare_number(ctx, compare, original, update, _o, _u):
    for word, exclusive_word, names, exclusive_names in (
            ("maximum", "exclusiveMaximum", "MAXIMUM", "EXCLUSIVE_MAXIMUM"),
            ("minimum", "exclusiveMinimum", "MINIMUM", "EXCLUSIVE_MINIMUM")):
        before, before_exclusive = _limit(original, word, exclusive_word)
        after, after_exclusive = _limit(update, word, exclusive_word)
        _bound(ctx, word, before, after, names)
        _bound(ctx, exclusive_word, before_exclusive, after_exclusive, exclusive_names)
    before, after = original.get("multipleOf"), update.get("multipleOf")
    if before != after:
        if before is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif after is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif isinstance(before, (int, float)) and isinstance(after, (int, float)) and before and after:
            ctx.add("MULTIPLE_OF_EXPANDED" if after % before == 0 else
                    "MULTIPLE_OF_REDUCED" if before % after == 0 else "MULTIPLE_OF_CHANGED", "multipleOf")
    before_integer = "integer" in _types(original)
    after_integer = "integer" in _types(update)
    if before_integer != after_integer:
        ctx.add("TYPE_EXTENDED" if before_integer else "TYPE_NARROWED")


def _types(schema):
    types = schema.get("type")
    return [types] if isinstance(types, str) else list(types or [])


def _key(value):
    return json.dumps(value, sort_keys=True)


def compare_enum(ctx, compare, original, update, before, after):
    before = {_key(v) for v in before} if isinstance(before, list) else set()
    after = {_key(v) for v in after} if isinstance(after, list) else set()
    if before != after:
        ctx.add("ENUM_ARRAY_EXTENDED" if after >= before else
                "ENUM_ARRAY_NARROWED" if before >= after else "ENUM_ARRAY_CHANGED", "enum")


def compare_const(ctx, compare, original, update, before, after):
    if _key(before) != _key(after):
        ctx.add("CONST_CHANGED", "const")


def compare_not(ctx, compare, original, update, before, after):
    """not A read as not B: fine when B's values are all A's, i.e. A reads B."""
    sub = ctx.sub()
    sub.original_resolver, sub.update_resolver = ctx.update_resolver, ctx.original_resolver
    compare(sub, after, before)
    ctx.add("NOT_TYPE_NARROWED" if sub.compatible() else "NOT_TYPE_EXTENDED")


# -- combined -------------------------------------------------------------------------------------

def _criteria(before, after, before_size, after_size):
    if before == after:
        return None
    if after == "anyOf" or (after == "oneOf" and before_size == 1) or (
            after == "allOf" and before_size == 1 and after_size == 1):
        return "COMBINED_TYPE_EXTENDED"
    return "COMBINED_TYPE_CHANGED"


def compare_combined(ctx, compare, original, update, before_parts, after_parts):
    (before_criterion, before), (after_criterion, after) = before_parts, after_parts
    before = list({_key(s): s for s in before}.values())
    after = list({_key(s): s for s in after}.values())
    change = _criteria(before_criterion, after_criterion, len(before), len(after))
    if change:
        ctx.add(change)
        if change == "COMBINED_TYPE_CHANGED":
            return
    if len(before) != len(after):
        grew = len(before) < len(after)
        product = after_criterion == "allOf"
        ctx.add(("PRODUCT_TYPE_" if product else "SUM_TYPE_") + ("EXTENDED" if grew else "NARROWED"))
    edges = {}
    for i, before_schema in enumerate(before):
        for j, after_schema in enumerate(after):
            sub = ctx.sub()
            sub.path.append(f"{before_criterion}/{i}")
            compare(sub, before_schema, after_schema)
            if sub.compatible():
                edges[(i, j)] = sub.found
    matching = _maximum_matching(len(before), len(after), edges)
    for edge in matching:
        ctx.found.extend(edges[edge])
    if len(matching) < min(len(before), len(after)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _maximum_matching(left, right, edges):
    """A maximum bipartite matching (augmenting paths; subschema lists are short)."""
    match_of_right: dict[int, int] = {}

    def augment(i, visited):
        for j in range(right):
            if (i, j) in edges and j not in visited:
                visited.add(j)
                if j not in match_of_right or augment(match_of_right[j], visited):
                    match_of_right[j] = i
                    return True
        return False

    for i in range(left):
        augment(i, set())
    return [(i, j) for j, i in match_of_right.items()]


COMPARERS = {
    "object": compare_object, "array": compare_array, "string": compare_string, "number": compare_number,
    "enum": compare_enum, "const": compare_const, "not": compare_not, "combined": compare_combined,
}
