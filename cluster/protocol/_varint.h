/* Kafka's varints (7 bits a byte, low group first, zigzag for the sign), as
 * the C record walks read them: every byte tested against the end of the
 * buffer before it is read. */
#ifndef KAFKACTL_VARINT_H
#define KAFKACTL_VARINT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum varint_read { VARINT_OK, VARINT_PAST_END, VARINT_TOO_LONG, VARINT_TOO_WIDE };

/* The unsigned value of at most max_bytes (5 for a varint, 10 for a varlong)
 * at *pos, which moves past it. A varint must fit 32 bits (TOO_WIDE, *out
 * set: < 2^35); a varlong keeps its low 64 bits, as Kafka's reader. */
static inline enum varint_read read_unsigned_varint(const uint8_t *data, Py_ssize_t end, Py_ssize_t *pos,
                                                    int max_bytes, uint64_t *out)
{
    uint64_t u = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (*pos >= end)
            return VARINT_PAST_END;
        uint8_t byte = data[(*pos)++];
        u |= (uint64_t)(byte & 0x7F) << (7 * i);   /* 7 * 9 = 63: a defined shift */
        if (byte < 0x80) {
            *out = u;
            return max_bytes == 5 && u > 0xFFFFFFFFu ? VARINT_TOO_WIDE : VARINT_OK;
        }
    }
    return VARINT_TOO_LONG;
}

static inline int64_t zigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

#endif
