/* The record pass of record_validation.check_records in C: rules R1-R6 and P2
 * of that module's doc, over an uncompressed records payload. Decompression
 * and the batch rules stay in Python; record_validation.check_records_reference
 * is the same walk in Python, the executable specification this file follows
 * read by read (tests/unit/cluster/protocol/test_record_check_native.py
 * compares the two on every unit-test batch and on random mutations).
 *
 *   check_records(data, record_count, refuse_null_key=False) -> None | (record_index, detail)
 *
 * data: any C-contiguous buffer (bytes, bytearray, memoryview), read in place.
 * detail is the reference's message after "batch B: record I: "; record_index
 * -1 means the batch-level P2 failure "N bytes after the last of its ...".
 * With refuse_null_key (a compacted topic, rule K1), a payload that passes
 * every other rule but holds a record with a null key answers
 * (index of the first such record, "key is null"): every other failure is
 * reported first, as Kafka's reader throws on those before its key check.
 *
 * This is the leader's gate for untrusted bytes, so:
 * - every read goes through read_varint or is preceded by a test against the
 *   buffer's length (the one other read is data[pos] with pos + 1 == record_end
 *   <= end);
 * - positions are Py_ssize_t (64-bit): a skip adds at most 2^31 - 1 (a 32-bit
 *   length) before the next read tests pos < end, so they cannot overflow;
 * - nothing is allocated from a declared count: record_count and headerCount
 *   only bound loops, and each loop step consumes at least one byte or stops;
 * - no recursion; the message is built after the walk, with the GIL held.
 */
#include "_varint.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

/* Above this many bytes the walk releases the GIL (other connections' threads
 * run meanwhile); below it, releasing costs more than the walk itself. */
#define RELEASE_GIL_BYTES (64 * 1024)

/* The first four are _varint.h's answers, in its order. */
enum verdict {
    VALID = VARINT_OK, PAST_END = VARINT_PAST_END, TOO_LONG = VARINT_TOO_LONG, TOO_WIDE = VARINT_TOO_WIDE,
    BAD_LENGTH, BAD_OFFSET_DELTA, NEGATIVE_KEY, NEGATIVE_VALUE, FIELDS_PAST_RECORD, BAD_HEADER_COUNT,
    HEADER_OUTSIDE, NULL_HEADER_KEY, FIELDS_END, TRAILING, NULL_KEY
};

/* The field being read, for the message; order matches FIELD_NAMES. */
enum field { F_LENGTH, F_TIMESTAMP, F_OFFSET, F_KEY, F_VALUE, F_HEADER_COUNT, F_HEADER_KEY, F_HEADER_VALUE };
static const char *const FIELD_NAMES[] = {
    "length", "timestampDelta", "offsetDelta", "key length", "value length", "headerCount",
    "key length", "value length"   /* after "header H " */
};

typedef struct {
    const uint8_t *data;
    Py_ssize_t end, pos;
    /* where it stopped, for the message */
    Py_ssize_t index, record_start, record_end;
    int64_t header, value;
    enum field field;
    /* K1: refuse null keys; how many were seen and the first one's index */
    int refuse_null_key;
    Py_ssize_t null_keys, first_null_key;
} walk;

/* A varint of at most max_bytes (5, or 10 for a varlong) at w->pos, as the
 * reference's _varint: each byte tested against the payload's end, not the
 * record's (a field running into the next record is caught afterwards, as
 * there). Only varints are limited to 32 bits; a varlong's value is unused. */
static enum verdict read_varint(walk *w, int max_bytes, uint64_t *out)
{
    enum verdict v = (enum verdict)read_unsigned_varint(w->data, w->end, &w->pos, max_bytes, out);
    if (v == TOO_WIDE)
        w->value = (int64_t)*out;   /* < 2^35 */
    return v;
}

/* A header key or value: length varint (-1 null) and its bytes, in the record. */
static enum verdict skip_field(walk *w, int64_t *length)
{
    uint64_t u;
    enum verdict v = read_varint(w, 5, &u);
    if (v != VALID)
        return v;
    *length = zigzag(u);
    if (*length < -1 || w->pos + *length > w->record_end) {
        w->value = *length;
        return HEADER_OUTSIDE;
    }
    if (*length > 0)
        w->pos += *length;
    return VALID;
}

/* No Python API in here: it may run without the GIL. */
static enum verdict walk_records(walk *w, Py_ssize_t record_count)
{
    enum verdict v;
    uint64_t u;
    for (Py_ssize_t index = 0; index < record_count; index++) {
        w->index = index;
        w->record_start = w->pos;
        w->field = F_LENGTH;
        if ((v = read_varint(w, 5, &u)) != VALID)
            return v;
        w->record_end = w->pos + (Py_ssize_t)(u >> 1);
        if ((u & 1) || w->record_end > w->end) {   /* R2; odd = negative */
            w->value = zigzag(u);
            return BAD_LENGTH;
        }
        w->pos += 1;   /* attributes: unused in v2 and not read, as in the reference */
        w->field = F_TIMESTAMP;
        if ((v = read_varint(w, 10, &u)) != VALID)
            return v;
        w->field = F_OFFSET;
        if ((v = read_varint(w, 5, &u)) != VALID)
            return v;
        if (u != (uint64_t)index << 1) {   /* R3: zigzag(index), index >= 0 */
            w->value = zigzag(u);
            return BAD_OFFSET_DELTA;
        }
        /* R4: the key and the value skip unchecked here, like the reference;
         * R6 below (or the next read's end test) catches a length too long */
        w->field = F_KEY;
        if ((v = read_varint(w, 5, &u)) != VALID)
            return v;
        if (!(u & 1))
            w->pos += (Py_ssize_t)(u >> 1);
        else if (u != 1) {
            w->value = zigzag(u);
            return NEGATIVE_KEY;
        } else if (w->refuse_null_key && w->null_keys++ == 0) {
            w->first_null_key = index;   /* K1, reported once the walk found nothing worse */
        }
        w->field = F_VALUE;
        if ((v = read_varint(w, 5, &u)) != VALID)
            return v;
        if (!(u & 1))
            w->pos += (Py_ssize_t)(u >> 1);
        else if (u != 1) {
            w->value = zigzag(u);
            return NEGATIVE_VALUE;
        }
        /* most records end with headerCount 0; pos + 1 == record_end <= end */
        if (w->pos + 1 == w->record_end && w->data[w->pos] == 0) {
            w->pos = w->record_end;
            continue;
        }
        if (w->pos >= w->record_end)
            return FIELDS_PAST_RECORD;
        w->field = F_HEADER_COUNT;
        if ((v = read_varint(w, 5, &u)) != VALID)
            return v;
        int64_t count = zigzag(u);
        /* R5: each header takes at least two bytes; the count varint itself
         * may have run past the record (left < 0: the reference's floor
         * division makes any count too many) */
        Py_ssize_t left = w->record_end - w->pos;
        if (count < 0 || left < 0 || count > left / 2) {
            w->value = count;
            return BAD_HEADER_COUNT;
        }
        for (int64_t header = 0; header < count; header++) {
            int64_t length;
            w->header = header;
            w->field = F_HEADER_KEY;
            if ((v = skip_field(w, &length)) != VALID)
                return v;
            if (length == -1)
                return NULL_HEADER_KEY;
            w->field = F_HEADER_VALUE;
            if ((v = skip_field(w, &length)) != VALID)
                return v;
        }
        if (w->pos != w->record_end)   /* R6 */
            return FIELDS_END;
    }
    if (w->pos != w->end)
        return TRAILING;   /* P2 */
    return w->null_keys ? NULL_KEY : VALID;
}

/* The reference's message for a failed walk (after "batch B: record I: "). */
static PyObject *failure(const walk *w, enum verdict v, Py_ssize_t record_count)
{
    char text[256], field[64];
    Py_ssize_t index = w->index;
    if (w->field >= F_HEADER_KEY)
        snprintf(field, sizeof field, "header %" PRId64 " %s", w->header, FIELD_NAMES[w->field]);
    else
        snprintf(field, sizeof field, "%s", FIELD_NAMES[w->field]);
    switch (v) {
    case PAST_END:
        if (w->record_start >= w->end)
            snprintf(text, sizeof text, "missing: the batch declares %zd records but its payload ends after %zd",
                     record_count, index);
        else
            snprintf(text, sizeof text, "a field runs past the end of the batch");
        break;
    case TOO_LONG:
        snprintf(text, sizeof text, "%s %s", field,
                 w->field == F_TIMESTAMP ? "varlong longer than 10 bytes" : "varint longer than 5 bytes");
        break;
    case TOO_WIDE:
        snprintf(text, sizeof text, "%s varint 0x%" PRIx64 " is wider than 32 bits", field, (uint64_t)w->value);
        break;
    case BAD_LENGTH:
        snprintf(text, sizeof text, "length %" PRId64 " runs past the end of the batch (%zd bytes left)",
                 w->value, w->end - w->pos);
        break;
    case BAD_OFFSET_DELTA:
        snprintf(text, sizeof text, "offsetDelta %" PRId64 ", expected %zd", w->value, index);
        break;
    case NEGATIVE_KEY:
    case NEGATIVE_VALUE:
        snprintf(text, sizeof text, "%s %" PRId64 " is negative and not -1 (null)", field, w->value);
        break;
    case FIELDS_PAST_RECORD:
        snprintf(text, sizeof text, "key and value run past the record's length %zd",
                 w->record_end - w->record_start);
        break;
    case BAD_HEADER_COUNT:
        snprintf(text, sizeof text, "headerCount %" PRId64 " is negative or more than the %zd bytes left could hold",
                 w->value, w->record_end - w->pos);
        break;
    case HEADER_OUTSIDE:
        snprintf(text, sizeof text, "%s %" PRId64 " outside the record (%zd bytes left)", field, w->value,
                 w->record_end - w->pos);
        break;
    case NULL_HEADER_KEY:
        snprintf(text, sizeof text, "header %" PRId64 " key is null", w->header);
        break;
    case FIELDS_END:
        snprintf(text, sizeof text, "fields end at byte %+zd from the record's declared length",
                 w->pos - w->record_end);
        break;
    case NULL_KEY:
        snprintf(text, sizeof text, "key is null");
        index = w->first_null_key;
        break;
    case TRAILING:
        snprintf(text, sizeof text, "%zd bytes after the last of its %zd records", w->end - w->pos, record_count);
        index = -1;
        break;
    default:
        PyErr_SetString(PyExc_SystemError, "_record_check: unknown verdict");
        return NULL;
    }
    return Py_BuildValue("(ns)", index, text);
}

static PyObject *check_records(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer view;
    Py_ssize_t record_count;
    int refuse_null_key = 0;
    if (!PyArg_ParseTuple(args, "y*n|p:check_records", &view, &record_count, &refuse_null_key))
        return NULL;   /* y*: any C-contiguous buffer, held until PyBuffer_Release */
    walk w = {.data = view.buf, .end = view.len, .refuse_null_key = refuse_null_key};
    enum verdict v;
    if (view.len >= RELEASE_GIL_BYTES) {
        /* The buffer stays exported until PyBuffer_Release, so it cannot be
         * resized or freed meanwhile; another thread writing into a bytearray
         * could change the verdict, never the bounds. */
        Py_BEGIN_ALLOW_THREADS
        v = walk_records(&w, record_count);
        Py_END_ALLOW_THREADS
    } else {
        v = walk_records(&w, record_count);
    }
    PyObject *result = v == VALID ? Py_NewRef(Py_None) : failure(&w, v, record_count);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"check_records", check_records, METH_VARARGS,
     "check_records(data, record_count, refuse_null_key=False) -> None | (record_index, detail): rules\n"
     "R1-R6, P2 (and K1 with refuse_null_key) of record_validation over an uncompressed records payload;\n"
     "record_index -1 for bytes after the last record."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_record_check",
    "Native record pass of kafkactl.cluster.protocol.record_validation (see check_records_reference).",
    0, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__record_check(void) { return PyModule_Create(&module); }
