/* The log cleaner's two record passes (cluster/log/log_clean.py) in C, over
 * an uncompressed records payload: building the offset map, and keeping the
 * survivors of a batch. Decompression, the batch header and the CRC stay in
 * Python (record_filter.py). The Python reference is record_filter.split_records
 * (the walk, read by read as here, same messages) composed with
 * compaction.offset_map and compaction.survives (the decisions);
 * tests/unit/cluster/protocol/test_record_filter_native.py compares the two on
 * random batches and random mutations of them.
 *
 *   collect_keys(payload, record_count, last_offset_delta, base_offset, first_dirty, found) -> int
 *       found (an OffsetMap, _offset_map.c) [key] = offset for every record
 *       with a key at or above first_dirty, in order (the last one wins); the
 *       number of records. A payload that cannot be read leaves `found`
 *       untouched: the walk checks the whole payload before the first insertion.
 *   keep_records(payload, record_count, last_offset_delta, base_offset, latest, retain_tombstones)
 *       -> (records, kept, survivors, max_timestamp_delta), latest an OffsetMap;
 *       survivors: the kept records' bytes as written (offset and timestamp
 *       deltas unchanged), None when every record is kept (the caller copies
 *       the batch as it is); max_timestamp_delta: the kept records' largest,
 *       None when none is kept.
 *
 * A payload that cannot be read raises ValueError with the reference's
 * message (record_filter turns it into CorruptRecordError). The stored log is
 * trusted no more than a produce request, so:
 * - every read goes through read_varint, which tests the position against the
 *   payload's end; a key or value is only skipped after its length was
 *   checked against the record's end, itself checked against the payload's;
 * - positions are Py_ssize_t (64-bit) and a skip adds at most 2^31 - 1, so
 *   they cannot overflow before the next test;
 * - nothing is allocated from a declared count or length: the survivors'
 *   buffer is the payload's size, and every loop step consumes a byte or stops;
 * - offsets are computed only after base_offset + last_offset_delta was
 *   checked to fit an int64, and each offsetDelta to lie in 0..last_offset_delta.
 */
#include "_offset_map.h"
#include "_varint.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The first four are _varint.h's answers, in its order. */
enum verdict {
    VALID = VARINT_OK, PAST_END = VARINT_PAST_END, TOO_LONG = VARINT_TOO_LONG, TOO_WIDE = VARINT_TOO_WIDE,
    BAD_LENGTH, BAD_OFFSET_DELTA, BAD_KEY, BAD_VALUE, TRAILING
};

typedef struct {
    const uint8_t *data;
    Py_ssize_t end, pos;
    int64_t last_offset_delta;
    /* where a walk stopped, for the message */
    Py_ssize_t index;
    int64_t value;
    int max_bytes;
} walk;

typedef struct {
    Py_ssize_t start, end;          /* the record's bytes, its length varint first */
    int64_t timestamp_delta, offset_delta;
    Py_ssize_t key_at;
    int64_t key_length;             /* -1: null */
    int is_tombstone;               /* a null value */
} record;

/* A varint (max_bytes 5) or varlong (10) at w->pos, zigzag-decoded (_varint.h). */
static enum verdict read_varint(walk *w, int max_bytes, int64_t *out)
{
    uint64_t u = 0;
    w->max_bytes = max_bytes;
    enum verdict v = (enum verdict)read_unsigned_varint(w->data, w->end, &w->pos, max_bytes, &u);
    *out = zigzag(u);   /* read only when VALID */
    return v;
}

/* One record at w->pos, as record_filter.split_records reads it; on success
 * w->pos is the record's end. */
static enum verdict read_record(walk *w, record *r)
{
    enum verdict v;
    int64_t length, value_length;
    r->start = w->pos;
    if ((v = read_varint(w, 5, &length)) != VALID)
        return v;
    if (length < 0 || length > w->end - w->pos) {
        w->value = length;
        return BAD_LENGTH;
    }
    r->end = w->pos + (Py_ssize_t)length;
    w->pos += 1;   /* attributes: unused in v2; the next read tests the end */
    if ((v = read_varint(w, 10, &r->timestamp_delta)) != VALID)
        return v;
    if ((v = read_varint(w, 5, &r->offset_delta)) != VALID)
        return v;
    if (r->offset_delta < 0 || r->offset_delta > w->last_offset_delta) {
        w->value = r->offset_delta;
        return BAD_OFFSET_DELTA;
    }
    if ((v = read_varint(w, 5, &r->key_length)) != VALID)
        return v;
    /* r->end - w->pos may be negative (the fields ran into the next record) */
    if (r->key_length < -1 || (r->key_length > 0 ? r->key_length : 0) > r->end - w->pos) {
        w->value = r->key_length;
        return BAD_KEY;
    }
    r->key_at = w->pos;
    if (r->key_length > 0)
        w->pos += (Py_ssize_t)r->key_length;
    if ((v = read_varint(w, 5, &value_length)) != VALID)
        return v;
    if (value_length < -1 || (value_length > 0 ? value_length : 0) > r->end - w->pos) {
        w->value = value_length;
        return BAD_VALUE;
    }
    r->is_tombstone = value_length == -1;
    w->pos = r->end;   /* headers are not read: the cleaner copies them as they are */
    return VALID;
}

/* ValueError with the reference's message; NULL for the caller to return. */
static PyObject *refuse(const walk *w, enum verdict v, Py_ssize_t record_count)
{
    char text[160];
    switch (v) {
    case PAST_END:
        snprintf(text, sizeof text, "record %zd: a field runs past the payload", w->index);
        break;
    case TOO_LONG:
        snprintf(text, sizeof text, "record %zd: %s longer than %d bytes", w->index,
                 w->max_bytes == 5 ? "varint" : "varlong", w->max_bytes);
        break;
    case TOO_WIDE:
        snprintf(text, sizeof text, "record %zd: varint wider than 32 bits", w->index);
        break;
    case BAD_LENGTH:
        snprintf(text, sizeof text, "record %zd: length %" PRId64 " does not fit the payload", w->index, w->value);
        break;
    case BAD_OFFSET_DELTA:
        snprintf(text, sizeof text, "record %zd: offsetDelta %" PRId64 " outside the batch's 0..%" PRId64,
                 w->index, w->value, w->last_offset_delta);
        break;
    case BAD_KEY:
    case BAD_VALUE:
        snprintf(text, sizeof text, "record %zd: %s length %" PRId64 " does not fit its record", w->index,
                 v == BAD_KEY ? "key" : "value", w->value);
        break;
    case TRAILING:
        snprintf(text, sizeof text, "%zd bytes after the last of %zd records", w->end - w->pos, record_count);
        break;
    default:
        PyErr_SetString(PyExc_SystemError, "_record_filter: unknown verdict");
        return NULL;
    }
    PyErr_SetString(PyExc_ValueError, text);
    return NULL;
}

/* The arguments both functions share; 0 with an exception set when they cannot be used. */
static int start_walk(walk *w, const Py_buffer *view, Py_ssize_t *record_count, int64_t last_offset_delta,
                      int64_t base_offset)
{
    *w = (walk){.data = view->buf, .end = view->len, .last_offset_delta = last_offset_delta};
    if (*record_count < 0)
        *record_count = 0;   /* as the reference's range(max(record_count, 0)) */
    if (last_offset_delta > 0 && base_offset > INT64_MAX - last_offset_delta) {
        PyErr_SetString(PyExc_ValueError, "the batch's last offset overflows 64 bits");
        return 0;
    }
    return 1;
}

/* Records are read GROUP at a time, and the map slots of their keys, then the
 * keys those slots point to, prefetched before the first is looked up: a map
 * of many keys is larger than the CPU's caches, so each lookup is two cache
 * misses, and the misses of one group are then waited for together rather than
 * one after the other (measured: docs/compaction.md). */
#define GROUP 16

typedef struct {
    record r;
    uint32_t hash;   /* of its key, when it has one */
} grouped;

/* Up to GROUP records from w->index on: how many, or -1 with *v set and
 * w->index at the record that cannot be read. */
static Py_ssize_t read_group(walk *w, Py_ssize_t record_count, const OffsetMap *map, grouped *group, enum verdict *v)
{
    Py_ssize_t n = 0;
    for (; n < GROUP && w->index < record_count; n++, w->index++) {
        record *r = &group[n].r;
        if ((*v = read_record(w, r)) != VALID)
            return -1;
        if (r->key_length >= 0) {
            group[n].hash = offset_map_hash(w->data + r->key_at, r->key_length);
            offset_map_prefetch(map, group[n].hash);
        }
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        if (group[j].r.key_length >= 0)
            offset_map_prefetch_key(map, group[j].hash);
    }
    return n;
}

static PyObject *collect_keys(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer view;
    Py_ssize_t record_count;
    long long last_offset_delta, base_offset, first_dirty;
    PyObject *found;
    if (!PyArg_ParseTuple(args, "y*nLLLO!:collect_keys", &view, &record_count, &last_offset_delta, &base_offset,
                          &first_dirty, &OffsetMap_Type, &found))
        return NULL;
    PyObject *result = NULL;
    walk w;
    record r;
    enum verdict v = VALID;
    if (!start_walk(&w, &view, &record_count, last_offset_delta, base_offset))
        goto done;
    /* First the whole payload, so that a corrupt batch adds no key. */
    for (w.index = 0; w.index < record_count; w.index++) {
        if ((v = read_record(&w, &r)) != VALID)
            break;
    }
    if (v == VALID && w.pos != w.end)
        v = TRAILING;
    if (v != VALID) {
        refuse(&w, v, record_count);
        goto done;
    }
    w.pos = 0;
    grouped group[GROUP];
    for (w.index = 0; w.index < record_count;) {
        Py_ssize_t n = read_group(&w, record_count, (const OffsetMap *)found, group, &v);   /* checked above */
        for (Py_ssize_t j = 0; j < n; j++) {
            const record *g = &group[j].r;
            int64_t offset = base_offset + g->offset_delta;
            if (g->key_length >= 0 && offset >= first_dirty
                && offset_map_put((OffsetMap *)found, w.data + g->key_at, g->key_length, group[j].hash, offset) < 0)
                goto done;
        }
    }
    result = PyLong_FromSsize_t(record_count);
done:
    PyBuffer_Release(&view);
    return result;
}

/* compaction.survives: a key, no later record of it in `latest`, and not a
 * tombstone past the delete horizon. */
static int survives(const walk *w, const grouped *g, int64_t offset, const OffsetMap *latest, int retain_tombstones)
{
    const record *r = &g->r;
    if (r->key_length < 0)
        return 0;
    const map_slot *newer = offset_map_find(latest, w->data + r->key_at, r->key_length, g->hash);
    if (newer != NULL && newer->offset > offset)
        return 0;
    return retain_tombstones || !r->is_tombstone;
}

static PyObject *keep_records(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer view;
    Py_ssize_t record_count;
    long long last_offset_delta, base_offset;
    PyObject *latest;
    int retain_tombstones;
    if (!PyArg_ParseTuple(args, "y*nLLO!p:keep_records", &view, &record_count, &last_offset_delta, &base_offset,
                          &OffsetMap_Type, &latest, &retain_tombstones))
        return NULL;
    PyObject *result = NULL, *survivors = NULL;
    char *out = NULL;            /* survivors' bytes, from the first record dropped on */
    Py_ssize_t out_len = 0, kept = 0;
    int64_t max_timestamp_delta = INT64_MIN;
    walk w;
    grouped group[GROUP];
    enum verdict v;
    if (!start_walk(&w, &view, &record_count, last_offset_delta, base_offset))
        goto done;
    for (w.index = 0; w.index < record_count;) {
        Py_ssize_t n = read_group(&w, record_count, (const OffsetMap *)latest, group, &v);
        if (n < 0) {
            refuse(&w, v, record_count);
            goto done;
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            const record *r = &group[j].r;
            if (survives(&w, &group[j], base_offset + r->offset_delta, (const OffsetMap *)latest, retain_tombstones)) {
                kept++;
                if (r->timestamp_delta > max_timestamp_delta)
                    max_timestamp_delta = r->timestamp_delta;
                if (out != NULL) {   /* out holds at most the payload: out_len <= r->start */
                    memcpy(out + out_len, w.data + r->start, (size_t)(r->end - r->start));
                    out_len += r->end - r->start;
                }
            } else if (out == NULL) {
                /* the first record dropped: the ones before it are the payload's first bytes */
                survivors = PyBytes_FromStringAndSize(NULL, view.len);
                if (survivors == NULL)
                    goto done;
                out = PyBytes_AS_STRING(survivors);
                memcpy(out, w.data, (size_t)r->start);
                out_len = r->start;
            }
        }
    }
    if (w.pos != w.end) {
        refuse(&w, TRAILING, record_count);
        goto done;
    }
    if (survivors == NULL && kept == 0) {   /* no records at all */
        survivors = PyBytes_FromStringAndSize(NULL, 0);
        if (survivors == NULL)
            goto done;
    } else if (survivors != NULL && _PyBytes_Resize(&survivors, out_len) < 0) {
        goto done;   /* _PyBytes_Resize freed it */
    }
    /* N: the max timestamp delta's new reference goes to the tuple */
    result = Py_BuildValue("(nnON)", record_count, kept, survivors ? survivors : Py_None,
                           kept ? PyLong_FromLongLong(max_timestamp_delta) : Py_NewRef(Py_None));
done:
    Py_XDECREF(survivors);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"collect_keys", collect_keys, METH_VARARGS,
     "collect_keys(payload, record_count, last_offset_delta, base_offset, first_dirty, found) -> records:\n"
     "found[key] = offset for each keyed record at or above first_dirty (ValueError: unreadable, found untouched)."},
    {"keep_records", keep_records, METH_VARARGS,
     "keep_records(payload, record_count, last_offset_delta, base_offset, latest, retain_tombstones)\n"
     "-> (records, kept, survivors or None when all are kept, max timestamp delta or None)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_record_filter",
    .m_doc = "Native record passes of the log cleaner (see kafkactl.cluster.protocol.record_filter).",
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__record_filter(void)
{
    if (PyType_Ready(&OffsetMap_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "OffsetMap", (PyObject *)&OffsetMap_Type) < 0)
        Py_CLEAR(m);
    return m;
}
