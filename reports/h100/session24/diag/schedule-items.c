#include <stdio.h>
#include <stdlib.h>
#include "kernels/mla_decode/schedule.h"
static void show(const char *name, int *lens, int batch, int groups, int cost, int snap, int cap, int gran) {
    mt_schedule_shape sh = {.batch = batch, .sq = 1, .n_heads = 128, .tile_q = 64, .granularity = gran,
                            .n_groups = groups, .request_cost = cost, .snap_keys = snap, .snap_cap = cap};
    int S = mt_schedule_stretches(&sh);
    int32_t *w = malloc(mt_schedule_entry_bytes(S));
    if (mt_schedule_build(&sh, lens, w) != MT_OK) { printf("fail\n"); return; }
    int n_cut = w[1], n_pieces = w[3];
    int items = 0, maxitems = 0;
    for (int s = 0; s < S; s++) {
        int *a = &w[4 * (1 + s)], *b = &w[4 * (2 + s)];
        int last = b[1] > 0 ? b[0] : b[0] - 1;
        int count = (a[0] == b[0] && a[1] == b[1]) ? 0 : last - a[0] + 1;
        items += count; if (count > maxitems) maxitems = count;
    }
    /* keys per stretch (the critical path is the longest) */
    int longest = 0;
    long total_keys = 0;
    for (int s = 0; s < S; s++) {
        int *a = &w[4 * (1 + s)], *b = &w[4 * (2 + s)];
        long k = 0;
        for (int r = a[0]; r <= (b[1] > 0 ? b[0] : b[0] - 1) && r < batch; r++) {
            int from = r == a[0] ? a[1] : 0, to = r == b[0] ? b[1] : lens[r];
            k += to - from;
        }
        total_keys += k;
        if (k > longest) longest = (int)k;
    }
    int cut_pieces_2 = 0;
    for (int i = 0; i < n_cut; i++) cut_pieces_2 += w[4 * (2 + S + i) + 2] == 2;
    printf("%-28s groups %3d: %3d stretches, %3d items (max %d/stretch), %3d cut requests (%d in 2 pieces), %3d pieces -> %.1f MB partials; keys per stretch: longest %d, mean %.0f\n",
           name, groups, S, items, maxitems, n_cut, cut_pieces_2, n_pieces, n_pieces * 2 * 64 * 513 * 4 / 1e6,
           longest, (double)total_keys / S);
    free(w);
}
int main(void) {
    int u[32], ol[32];
    for (int i = 0; i < 32; i++) u[i] = 2016, ol[i] = 1024;
    ol[5] = 32768;
    for (int g = 132; g >= 66; g /= 2) {
        show("uniform 32x2016 (64,64,4)", u, 32, g, 64, 64, 4, 64);
        show("uniform 32x2016 (256,512,2)", u, 32, g, 256, 512, 2, 64);
        show("one-long (256,512,2)", ol, 32, g, 256, 512, 2, 64);
    }
    return 0;
}
