#include <stdio.h>
#include <stdlib.h>
#include "kernels/mla_decode/schedule.h"
int main(int argc, char **argv) {
    int B = atoi(argv[1]), L = atoi(argv[2]), longlen = argc > 3 ? atoi(argv[3]) : L;
    int32_t *lens = malloc(4 * B);
    for (int i = 0; i < B; i++) lens[i] = L;
    lens[0] = longlen;
    mt_schedule_shape sh = {.batch = B, .sq = 1, .n_heads = 16, .tile_q = 16, .granularity = 64, .n_groups = 132};
    int S = mt_schedule_stretches(&sh);
    int32_t *w = calloc(mt_schedule_entry_bytes(S), 1);
    mt_schedule_build(&sh, lens, w);
    printf("# stretches %d cut %d units %d pieces %d\n", w[0], w[1], w[2], w[3]);
    for (int s = 0; s < S; s++) {
        const int32_t *a = mt_schedule_start(w, s), *b = mt_schedule_start(w, s + 1);
        /* keys and items */
        long keys = 0; int items = 0;
        for (int r = a[0]; r <= b[0] && r < B; r++) {
            int k0 = r == a[0] ? a[1] : 0, k1 = r == b[0] ? b[1] : lens[r];
            if (k1 > k0) keys += k1 - k0, items++;
        }
        printf("%d %ld %d %d %d %d %d\n", s, keys, items, a[0], a[1], b[0], b[1]);
    }
}
