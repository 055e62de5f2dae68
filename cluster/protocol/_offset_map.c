/* OffsetMap: the log cleaner's map of each key to its last offset (see
 * _offset_map.h), and its Python face for log_clean.py and the tests.
 *
 * Rules:
 * - a key is found by its bytes: the hash only picks where to look, so two
 *   keys with the same hash are two entries (Kafka's SkimpyOffsetMap keeps a
 *   16-byte hash instead and takes the risk of a collision; this map does not);
 * - the hash is the one Python gives bytes (SipHash with the process's random
 *   key), so keys a producer chose cannot be made to collide on purpose and
 *   turn the linear probing into a crawl;
 * - the table doubles before it is 2/3 full, so a probe always ends at an
 *   empty slot; the key bytes live in one buffer that doubles as needed, and
 *   slots hold positions in it, so growing moves nothing a caller holds;
 * - sizes are checked before every allocation (a key of 2^31 bytes or more
 *   cannot be stored: Kafka's keys are at most that).
 */
#include "_offset_map.h"

#include <string.h>

#define FIRST_SLOTS 1024
#define FIRST_KEY_BYTES (16 * 1024)

uint32_t offset_map_hash(const uint8_t *key, Py_ssize_t length)
{
#if PY_VERSION_HEX >= 0x030E0000
    return (uint32_t)Py_HashBuffer(key, length);
#else
    return (uint32_t)_Py_HashBytes(key, length);
#endif
}

const map_slot *offset_map_find(const OffsetMap *map, const uint8_t *key, Py_ssize_t length, uint32_t hash)
{
    if (map->slots == NULL)
        return NULL;
    for (Py_ssize_t i = hash & map->mask;; i = (i + 1) & map->mask) {
        const map_slot *slot = &map->slots[i];
        if (slot->key_length < 0)
            return NULL;
        if (slot->hash == hash && slot->key_length == length && memcmp(map->keys + slot->key_at, key, (size_t)length) == 0)
            return slot;
    }
}

/* A table of `count` slots (a power of two) holding the current keys. */
static int resize(OffsetMap *map, Py_ssize_t count)
{
    if (count > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(map_slot)) {
        PyErr_NoMemory();
        return -1;
    }
    map_slot *slots = PyMem_Malloc((size_t)count * sizeof(map_slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        slots[i].key_length = -1;
    Py_ssize_t mask = count - 1;
    for (Py_ssize_t j = 0; map->slots != NULL && j <= map->mask; j++) {
        if (map->slots[j].key_length < 0)
            continue;
        Py_ssize_t i = map->slots[j].hash & mask;
        while (slots[i].key_length >= 0)   /* the keys are distinct: no comparison */
            i = (i + 1) & mask;
        slots[i] = map->slots[j];
    }
    PyMem_Free(map->slots);
    map->slots = slots;
    map->mask = mask;
    return 0;
}

/* Room for `length` more key bytes. */
static int reserve_key_bytes(OffsetMap *map, Py_ssize_t length)
{
    if (map->keys != NULL && length <= map->keys_allocated - map->keys_used)
        return 0;   /* allocated even for an empty key: key positions always point into it */
    Py_ssize_t size = map->keys_allocated ? map->keys_allocated : FIRST_KEY_BYTES;
    while (size - map->keys_used < length) {
        if (size > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        size *= 2;
    }
    char *keys = PyMem_Realloc(map->keys, (size_t)size);
    if (keys == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    map->keys = keys;
    map->keys_allocated = size;
    return 0;
}

int offset_map_put(OffsetMap *map, const uint8_t *key, Py_ssize_t length, uint32_t hash, int64_t offset)
{
    if (length > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "a key of 2^31 bytes or more");
        return -1;
    }
    if (map->slots == NULL && resize(map, FIRST_SLOTS) < 0)
        return -1;
    Py_ssize_t i;
    for (i = hash & map->mask; map->slots[i].key_length >= 0; i = (i + 1) & map->mask) {
        map_slot *slot = &map->slots[i];
        if (slot->hash == hash && slot->key_length == length
            && memcmp(map->keys + slot->key_at, key, (size_t)length) == 0) {
            slot->offset = offset;
            return 0;
        }
    }
    /* a new key: keep the table under 2/3 full, then look for its empty slot again */
    if ((map->size + 1) * 3 > (map->mask + 1) * 2) {
        if (resize(map, (map->mask + 1) * 2) < 0)
            return -1;
        for (i = hash & map->mask; map->slots[i].key_length >= 0; i = (i + 1) & map->mask)
            ;
    }
    if (reserve_key_bytes(map, length) < 0)
        return -1;
    if (length > 0)
        memcpy(map->keys + map->keys_used, key, (size_t)length);
    map->slots[i] = (map_slot){.offset = offset, .key_at = map->keys_used, .hash = hash, .key_length = (int32_t)length};
    map->keys_used += length;
    map->size++;
    return 0;
}

/* --- the Python face ------------------------------------------------------------------ */

static PyObject *map_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "OffsetMap() takes no arguments");
        return NULL;
    }
    return type->tp_alloc(type, 0);   /* zeroed: no table, no key bytes yet */
}

static void map_dealloc(OffsetMap *map)
{
    PyMem_Free(map->slots);
    PyMem_Free(map->keys);
    Py_TYPE(map)->tp_free((PyObject *)map);
}

static Py_ssize_t map_length(OffsetMap *map) { return map->size; }

static PyObject *map_get(OffsetMap *map, PyObject *args)
{
    Py_buffer key;
    PyObject *missing = Py_None;
    if (!PyArg_ParseTuple(args, "y*|O:get", &key, &missing))
        return NULL;
    const map_slot *slot = offset_map_find(map, key.buf, key.len, offset_map_hash(key.buf, key.len));
    PyBuffer_Release(&key);
    return slot ? PyLong_FromLongLong(slot->offset) : Py_NewRef(missing);
}

static PyObject *map_put(OffsetMap *map, PyObject *args)
{
    Py_buffer key;
    long long offset;
    if (!PyArg_ParseTuple(args, "y*L:put", &key, &offset))
        return NULL;
    int failed = offset_map_put(map, key.buf, key.len, offset_map_hash(key.buf, key.len), offset);
    PyBuffer_Release(&key);
    return failed ? NULL : Py_NewRef(Py_None);
}

static int is_map(PyObject *other)
{
    if (PyObject_TypeCheck(other, &OffsetMap_Type))
        return 1;
    PyErr_Format(PyExc_TypeError, "an OffsetMap, not %.100s", Py_TYPE(other)->tp_name);
    return 0;
}

/* How many keys of `other` this map does not hold (compaction.py rule 8). */
static PyObject *map_new_keys(OffsetMap *map, PyObject *other_object)
{
    if (!is_map(other_object))
        return NULL;
    const OffsetMap *other = (const OffsetMap *)other_object;
    Py_ssize_t count = 0;
    for (Py_ssize_t j = 0; other->slots != NULL && j <= other->mask; j++) {
        const map_slot *slot = &other->slots[j];
        if (slot->key_length >= 0
            && offset_map_find(map, (const uint8_t *)other->keys + slot->key_at, slot->key_length, slot->hash) == NULL)
            count++;
    }
    return PyLong_FromSsize_t(count);
}

/* Every key of `other` with its offset there, replacing this map's. */
static PyObject *map_update(OffsetMap *map, PyObject *other_object)
{
    if (!is_map(other_object))
        return NULL;
    OffsetMap *other = (OffsetMap *)other_object;
    if (other == map)
        return Py_NewRef(Py_None);   /* its key bytes could move under the copy */
    for (Py_ssize_t j = 0; other->slots != NULL && j <= other->mask; j++) {
        const map_slot *slot = &other->slots[j];
        if (slot->key_length >= 0
            && offset_map_put(map, (const uint8_t *)other->keys + slot->key_at, slot->key_length, slot->hash,
                              slot->offset) < 0)
            return NULL;
    }
    return Py_NewRef(Py_None);
}

static PyObject *map_items(OffsetMap *map, PyObject *Py_UNUSED(ignored))
{
    PyObject *items = PyList_New(0);
    for (Py_ssize_t j = 0; items != NULL && map->slots != NULL && j <= map->mask; j++) {
        const map_slot *slot = &map->slots[j];
        if (slot->key_length < 0)
            continue;
        PyObject *key = PyBytes_FromStringAndSize(map->keys + slot->key_at, slot->key_length);
        PyObject *item = key ? Py_BuildValue("(NL)", key, (long long)slot->offset) : NULL;
        if (item == NULL || PyList_Append(items, item) < 0)
            Py_CLEAR(items);
        Py_XDECREF(item);
    }
    return items;
}

static PyObject *map_sizeof(OffsetMap *map, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t slots = map->slots ? map->mask + 1 : 0;
    return PyLong_FromSsize_t((Py_ssize_t)sizeof(OffsetMap) + slots * (Py_ssize_t)sizeof(map_slot)
                              + map->keys_allocated);
}

static PyMethodDef map_methods[] = {
    {"get", (PyCFunction)map_get, METH_VARARGS, "get(key, default=None): the key's offset"},
    {"put", (PyCFunction)map_put, METH_VARARGS, "put(key, offset)"},
    {"new_keys", (PyCFunction)map_new_keys, METH_O, "new_keys(other): how many of other's keys are not here"},
    {"update", (PyCFunction)map_update, METH_O, "update(other): other's keys and offsets, replacing these"},
    {"items", (PyCFunction)map_items, METH_NOARGS, "items(): [(key, offset)], in no order"},
    {"__sizeof__", (PyCFunction)map_sizeof, METH_NOARGS, "bytes held"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods map_as_sequence = {.sq_length = (lenfunc)map_length};

PyTypeObject OffsetMap_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkactl.cluster.protocol._record_filter.OffsetMap",
    .tp_basicsize = sizeof(OffsetMap),
    .tp_dealloc = (destructor)map_dealloc,
    .tp_as_sequence = &map_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "OffsetMap(): each key's last offset (bytes -> int), for the log cleaner.",
    .tp_methods = map_methods,
    .tp_new = map_new,
};
