/* The log cleaner's offset map (compaction.py rule 2) in C: each key's last
 * offset, keys kept whole (compared byte for byte, never by hash alone), in
 * one open-addressing table and one buffer of key bytes: no Python object
 * per key or per lookup. _offset_map.c has the rules; _record_filter.c fills
 * and reads it. */
#ifndef KAFKACTL_OFFSET_MAP_H
#define KAFKACTL_OFFSET_MAP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* 24 bytes a key at most 2/3 full: 36 to 72 bytes a key, and the key's
 * bytes (a dict of bytes keys and int offsets takes about 130 and the key). */
typedef struct {
    int64_t offset;
    int64_t key_at;          /* in the map's key bytes */
    uint32_t hash;           /* its low bits are the key's first slot */
    int32_t key_length;      /* -1: an empty slot; a Kafka key is at most 2^31 - 1 bytes */
} map_slot;

typedef struct {
    PyObject_HEAD
    map_slot *slots;
    Py_ssize_t mask;         /* slot count - 1; the count is a power of two */
    Py_ssize_t size;         /* keys */
    char *keys;              /* every key's bytes, one after the other */
    Py_ssize_t keys_used, keys_allocated;
} OffsetMap;

extern PyTypeObject OffsetMap_Type;

uint32_t offset_map_hash(const uint8_t *key, Py_ssize_t length);
/* The slot holding `key`, or NULL. */
const map_slot *offset_map_find(const OffsetMap *map, const uint8_t *key, Py_ssize_t length, uint32_t hash);
/* Hints that the first slot of `hash`, then the key it holds, are about to
 * be read: the slot's, once it has arrived, are the likely ones. */
static inline void offset_map_prefetch(const OffsetMap *map, uint32_t hash)
{
    if (map->slots != NULL)
        __builtin_prefetch(&map->slots[hash & map->mask]);
}

static inline void offset_map_prefetch_key(const OffsetMap *map, uint32_t hash)
{
    if (map->slots != NULL && map->slots[hash & map->mask].key_length > 0)
        __builtin_prefetch(map->keys + map->slots[hash & map->mask].key_at);
}
/* map[key] = offset; -1 with an exception set when the map cannot grow. */
int offset_map_put(OffsetMap *map, const uint8_t *key, Py_ssize_t length, uint32_t hash, int64_t offset);

#endif
