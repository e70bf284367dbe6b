from score_rule import *
def make(thr, t16_tiles=2, halve=True, fp8_cluster=False, cmax=16):
    def rule(h, b, l, kv):
        fp8 = kv.startswith('fp8'); rows = h
        if not fp8:
            tile, stages = 64, 2
            if ((rows + 63)//64)*b <= t16_tiles: tile = 16
        elif rows >= 64 and kv == 'fp8e4m3' and ((rows+63)//64)*b >= 32: tile, stages = 64, 2
        elif rows >= 32: tile, stages = 32, 4
        else: tile, stages = 16, 4
        tiles = ((rows + tile - 1)//tile) * b
        s = 1
        while s < 128 and tiles*s*2 <= CUS and l // (s*2) >= 64: s *= 2
        if fp8 and tile == 64: s = min(s, 4)
        red = 0
        ratio = (s * min(rows, tile) * 512 * 4 * 2) / (l * 576 * (1 if fp8 else 2))
        if tile == 64 and (not fp8 or fp8_cluster) and s >= 2 and ratio > thr:
            red = 1
            if halve: s = max(2, s // 2)
            s = min(s, cmax)
        return dict(tile_q=tile, kv_stages=stages, num_splits=s, split_reduce=red, wg_schedule=0)
    return rule
for kvf in ('bf16','fp8e4m3'):
    f = lambda k, kvf=kvf: k[3] == kvf
    evaluate(make(1e9, t16_tiles=0), f'now {kvf}', f)
    evaluate(make(1e9), f't16 only {kvf}', f)
    for thr in (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0):
        for halve in (True, False):
            evaluate(make(thr, halve=halve, fp8_cluster=True), f'thr {thr} halve {halve} {kvf}', f)
