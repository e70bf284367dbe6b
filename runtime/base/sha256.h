/*
 * sha256.h - SHA-256 (FIPS 180-4), used to key the code-object cache and to
 * detect corrupt cache entries.  Written here from the standard; tested
 * against the standard's example vectors in tests/test_sha256.c.
 */
#ifndef MT_SHA256_H
#define MT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct mt_sha256 {
    uint32_t state[8];
    uint64_t length;      /* bytes absorbed so far */
    uint8_t block[64];    /* pending partial block */
    size_t block_used;
} mt_sha256;

void mt_sha256_init(mt_sha256 *h);
void mt_sha256_update(mt_sha256 *h, const void *data, size_t n);
void mt_sha256_final(mt_sha256 *h, uint8_t digest[32]);

/* One-shot helper. */
void mt_sha256_digest(const void *data, size_t n, uint8_t digest[32]);

/* Writes 64 lowercase hex characters and a terminating NUL into `hex`. */
void mt_sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
