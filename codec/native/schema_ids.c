/* The distinct schema ids of a Kafka records section's keys and values (codec/schema_ids.py), read in
 * one pass: the id level of the broker's schema validation costs a few nanoseconds per record here
 * instead of a Python loop. Plain C, no Python API: loaded with ctypes, built by `make setup`
 * (mk/native.mk); without it codec/schema_ids.py reads the section with numpy instead.
 *
 * The same contract as the numpy reader: an answer only when every record is plainly framed (every
 * varint short, every field inside its record, each non-null key/value asked for at least 5 bytes
 * starting with magic byte 0); anything else answers "not plain" and the caller takes the
 * per-record scan (codec/schema_frames.py), which says which records are refused and why. */
#include <stdint.h>

#define NOT_PLAIN (-1)
#define TOO_MANY (-2)

/* A varint of at most `most` bytes at *pos, all before `end`, zigzag-decoded into *value. */
static int varint(const uint8_t *buf, int64_t *pos, int64_t end, int most, int64_t *value)
{
    uint64_t raw = 0;
    for (int k = 0; k < most; k++) {
        if (*pos >= end)
            return 0;
        uint8_t b = buf[(*pos)++];
        raw |= (uint64_t)(b & 0x7F) << (7 * k);
        if (b < 0x80) {
            *value = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            return 1;
        }
    }
    return 0;
}

/* Adds the id framed at buf[at] (magic byte 0, then 4 bytes big-endian) to ids[0..*found). */
static int add_id(const uint8_t *buf, int64_t at, int64_t length, int32_t *ids, int *found, int most)
{
    if (length < 5 || buf[at] != 0)
        return NOT_PLAIN;
    int32_t id = (int32_t)(((uint32_t)buf[at + 1] << 24) | ((uint32_t)buf[at + 2] << 16)
                           | ((uint32_t)buf[at + 3] << 8) | (uint32_t)buf[at + 4]);
    for (int i = 0; i < *found; i++)
        if (ids[i] == id)
            return 0;
    if (*found == most)
        return TOO_MANY;
    ids[(*found)++] = id;
    return 0;
}

/* 0 with the distinct ids of each side asked for (want_keys, want_values) in key_ids[0..*key_count)
 * and value_ids[0..*value_count), at most `most` each; NOT_PLAIN or TOO_MANY otherwise. */
int schema_ids(const uint8_t *buf, int64_t n, int64_t count, int want_keys, int want_values,
               int32_t *key_ids, int *key_count, int32_t *value_ids, int *value_count, int most)
{
    int64_t pos = 0, length, key_len, value_len, skipped;
    *key_count = *value_count = 0;
    for (int64_t i = 0; i < count; i++) {
        if (!varint(buf, &pos, n, 3, &length) || length < 0 || length > n - pos)
            return NOT_PLAIN;
        int64_t end = pos + length;
        pos++; /* attributes */
        if (pos >= end || !varint(buf, &pos, end, 5, &skipped) /* timestampDelta */
            || !varint(buf, &pos, end, 5, &skipped) /* offsetDelta */
            || !varint(buf, &pos, end, 3, &key_len))
            return NOT_PLAIN;
        int64_t key_start = pos;
        if (key_len > 0) {
            if (key_len > end - pos)
                return NOT_PLAIN;
            pos += key_len;
        }
        if (!varint(buf, &pos, end, 3, &value_len))
            return NOT_PLAIN;
        int64_t value_start = pos;
        if (value_len > end - pos)
            return NOT_PLAIN;
        int status;
        if (want_keys && key_len >= 0 && (status = add_id(buf, key_start, key_len, key_ids, key_count, most)))
            return status;
        if (want_values && value_len >= 0
            && (status = add_id(buf, value_start, value_len, value_ids, value_count, most)))
            return status;
        pos = end;
    }
    return 0;
}
