/* SHA-256 against the FIPS 180-4 example vectors, and incremental hashing
 * that must give the same digest however the input is cut. */
#include "check.h"
#include "runtime/base/error.h"
#include "runtime/base/sha256.h"

static void hex_of(const void *data, size_t n, char hex[65]) {
    uint8_t d[32];
    mt_sha256_digest(data, n, d);
    mt_sha256_hex(d, hex);
}

int main(void) {
    char hex[65];
    hex_of("", 0, hex);
    CHECK(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
    hex_of("abc", 3, hex);
    CHECK(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two_blocks, strlen(two_blocks), hex);
    CHECK(strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1") == 0);

    /* one million 'a': many blocks through the incremental path */
    mt_sha256 h;
    mt_sha256_init(&h);
    char chunk[1000];
    memset(chunk, 'a', sizeof chunk);
    for (int i = 0; i < 1000; i++) mt_sha256_update(&h, chunk, sizeof chunk);
    uint8_t d[32];
    mt_sha256_final(&h, d);
    mt_sha256_hex(d, hex);
    CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0);

    /* every split point of a 200-byte message gives the same digest */
    unsigned char msg[200];
    for (int i = 0; i < 200; i++) msg[i] = (unsigned char)(i * 7 + 3);
    uint8_t whole[32];
    mt_sha256_digest(msg, sizeof msg, whole);
    int same = 1;
    for (size_t cut = 0; cut <= sizeof msg; cut++) {
        mt_sha256_init(&h);
        mt_sha256_update(&h, msg, cut);
        mt_sha256_update(&h, msg + cut, sizeof msg - cut);
        mt_sha256_final(&h, d);
        same &= memcmp(d, whole, 32) == 0;
    }
    CHECK(same);
    /* and a one-bit change changes it */
    msg[100] ^= 1;
    mt_sha256_digest(msg, sizeof msg, d);
    CHECK(memcmp(d, whole, 32) != 0);
    return check_summary("test_sha256");
}
