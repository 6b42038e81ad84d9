package compat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.CompactArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;

/**
 * Prints the wire schema of every version of every Kafka API, as kafka-clients itself compiled it from the
 * message JSON (common/message/*.json), so tests/kafka/test_kafka_schemas.py can compare our declarations
 * with Kafka's. One JSON line per API; args (API names, e.g. "Produce") restrict the output.
 *
 * A struct is {"flexible": ends with tagged fields, "fields": [...], "tagged": [...]}; a field is
 * {"name" (Kafka's own snake_case), "type", "nullable", "compact"} plus "tag" for a tagged field,
 * "items" for an array (a primitive type name or a struct) and "struct" for a struct.
 */
public final class KafkaSchemas {
    private KafkaSchemas() {}

    private static final Map<Type, String> PRIMITIVES = new LinkedHashMap<>();
    private static final List<Type> COMPACT = List.of(Type.COMPACT_STRING, Type.COMPACT_NULLABLE_STRING,
            Type.COMPACT_BYTES, Type.COMPACT_NULLABLE_BYTES, Type.COMPACT_RECORDS);

    static {
        PRIMITIVES.put(Type.BOOLEAN, "bool");
        PRIMITIVES.put(Type.INT8, "int8");
        PRIMITIVES.put(Type.INT16, "int16");
        PRIMITIVES.put(Type.UINT16, "uint16");
        PRIMITIVES.put(Type.INT32, "int32");
        PRIMITIVES.put(Type.UNSIGNED_INT32, "uint32");
        PRIMITIVES.put(Type.INT64, "int64");
        PRIMITIVES.put(Type.UUID, "uuid");
        PRIMITIVES.put(Type.FLOAT64, "float64");
        PRIMITIVES.put(Type.VARINT, "varint");
        PRIMITIVES.put(Type.VARLONG, "varlong");
        for (Type t : List.of(Type.STRING, Type.COMPACT_STRING, Type.NULLABLE_STRING, Type.COMPACT_NULLABLE_STRING)) {
            PRIMITIVES.put(t, "string");
        }
        for (Type t : List.of(Type.BYTES, Type.COMPACT_BYTES, Type.NULLABLE_BYTES, Type.COMPACT_NULLABLE_BYTES)) {
            PRIMITIVES.put(t, "bytes");
        }
        PRIMITIVES.put(Type.RECORDS, "records");
        PRIMITIVES.put(Type.COMPACT_RECORDS, "records");
    }

    public static void main(String[] args) {
        List<String> only = List.of(args);
        for (ApiMessageType api : ApiMessageType.values()) {
            if (!only.isEmpty() && !only.contains(api.name)) continue;
            Map<String, Object> versions = new LinkedHashMap<>();
            short lowest = api.lowestSupportedVersion();
            short highest = api.highestSupportedVersion(true);
            for (short v = lowest; v <= highest; v++) {
                versions.put(Short.toString(v), Out.map(
                        "request", struct(api.requestSchemas()[v]),
                        "response", struct(api.responseSchemas()[v])));
            }
            Out.emit(Out.map("key", (int) api.apiKey(), "name", api.name, "lowest", (int) lowest,
                    "highest", (int) highest, "highest_stable", (int) api.highestSupportedVersion(false),
                    "versions", versions));
        }
    }

    private static Map<String, Object> struct(Schema schema) {
        List<Object> fields = new ArrayList<>();
        List<Object> tagged = new ArrayList<>();
        boolean flexible = false;
        for (BoundField bound : schema.fields()) {
            if (bound.def.type instanceof TaggedFields) {
                flexible = true;
                for (Map.Entry<Integer, Field> e : taggedFields((TaggedFields) bound.def.type).entrySet()) {
                    Map<String, Object> f = field(e.getValue());
                    f.put("tag", e.getKey());
                    tagged.add(f);
                }
            } else {
                fields.add(field(bound.def));
            }
        }
        return Out.map("flexible", flexible, "fields", fields, "tagged", tagged);
    }

    /** The tag -> field map; read reflectively because kafka-clients 3.9 has no public accessor. */
    @SuppressWarnings("unchecked")
    private static Map<Integer, Field> taggedFields(TaggedFields section) {
        try {
            java.lang.reflect.Field map = TaggedFields.class.getDeclaredField("fields");
            map.setAccessible(true);
            return (Map<Integer, Field>) map.get(section);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("kafka-clients changed TaggedFields", e);
        }
    }

    private static Map<String, Object> field(Field def) {
        Map<String, Object> f = Out.map("name", def.name);
        Type t = def.type;
        f.put("nullable", t.isNullable());
        if (t instanceof Schema) {
            f.put("type", "struct");
            f.put("struct", struct((Schema) t));
        } else if (t.isArray()) {
            Type item = t.arrayElementType().orElseThrow();
            f.put("type", "array");
            f.put("compact", t instanceof CompactArrayOf);
            f.put("items", item instanceof Schema ? struct((Schema) item) : primitive(item));
        } else {
            f.put("type", primitive(t));
            f.put("compact", COMPACT.contains(t));
        }
        return f;
    }

    private static String primitive(Type t) {
        String name = PRIMITIVES.get(t);
        if (name == null) throw new IllegalArgumentException("unknown Kafka type " + t);
        return name;
    }
}
