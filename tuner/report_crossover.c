/*
 * report_crossover.c - the report's crossover section: where prefill's two
 * forms (MQA, absorbed; MHA, decompressed; db/crossover.h) cross, as
 * `mla-tune crossover` measured it.
 *
 * One chart and one table per measured device (arch and compute units),
 * head count and dtypes: both forms' time against sq, sq on a log2 axis
 * (chunks are measured a few per octave), one colour per measured context,
 * MQA solid and MHA dashed, so that each crossing is where a colour's two
 * lines meet; the boundary the runtime uses at each context
 * (runtime/api/crossover_pick.h, the same interpolation) marked in that
 * colour.  The table gives every point with its winner and the parts of
 * each form (absorb, attention, output; decompression, attention), which
 * say where a form's time goes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crossover_json.h"
#include "db/crossover.h"
#include "report_internal.h"
#include "runtime/api/crossover_pick.h"

static int same_group(const mt_crossover_point *a, const mt_crossover_point *b) {
    return strcmp(a->arch, b->arch) == 0 && a->compute_units == b->compute_units && a->n_heads == b->n_heads &&
           a->q_dtype == b->q_dtype && a->kv_dtype == b->kv_dtype;
}

/* The chart and table of one group: points[0..n), in the loader's order
 * (context, then sq). */
static void group_section(const mt_crossover_point *p, int n, mt_report_plots *plots, mt_text *md, const char *dir,
                          int *n_plots) {
    int contexts[64], nc = 0;
    for (int i = 0; i < n && nc < 64; i++)
        if (nc == 0 || contexts[nc - 1] != p[i].context) contexts[nc++] = p[i].context;
    double *x = malloc(sizeof *x * (size_t)n), *mqa = malloc(sizeof *mqa * (size_t)n),
           *mha = malloc(sizeof *mha * (size_t)n);
    mt_svg_series *series = calloc((size_t)(2 * nc), sizeof *series);
    mt_svg_mark *marks = calloc((size_t)nc, sizeof *marks);
    char (*names)[48] = calloc((size_t)(2 * nc), 48), (*mark_text)[48] = calloc((size_t)nc, 48);
    int boundaries[64];
    if (!x || !mqa || !mha || !series || !marks || !names || !mark_text) goto out;
    int n_marks = 0;
    for (int c = 0, at = 0; c < nc; c++) {
        int first = at;
        while (at < n && p[at].context == contexts[c]) {
            x[at] = p[at].sq, mqa[at] = p[at].mqa_ms, mha[at] = p[at].mha_ms;
            at++;
        }
        snprintf(names[2 * c], 48, "MQA, context %d", contexts[c]);
        snprintf(names[2 * c + 1], 48, "MHA, context %d", contexts[c]);
        series[2 * c] = (mt_svg_series){.x = x + first, .y = mqa + first, .n = at - first, .colour = c,
                                        .label = names[2 * c]};
        series[2 * c + 1] = (mt_svg_series){.x = x + first, .y = mha + first, .n = at - first, .colour = c,
                                            .dashed = 1, .label = names[2 * c + 1]};
        /* the runtime's boundary at this context: its own rule on these points */
        mt_crossover_query q = {.arch = p->arch, .compute_units = p->compute_units, .n_heads = p->n_heads,
                                .q_dtype = p->q_dtype, .kv_dtype = p->kv_dtype, .sq = 1, .context = contexts[c]};
        mlt_form_info f;
        mt_crossover_pick(p, n, &q, &f);
        boundaries[c] = f.boundary_sq;
        if (f.boundary_sq > 0) {
            snprintf(mark_text[n_marks], 48, "MHA from sq %d (context %d)", f.boundary_sq, contexts[c]);
            marks[n_marks] = (mt_svg_mark){.x = f.boundary_sq, .colour = c, .label = mark_text[n_marks]};
            n_marks++;
        }
    }
    char title[200], name[160];
    snprintf(title, sizeof title, "MQA (solid) and MHA (dashed): %s, %d CUs, %d heads, %s/%s", p->arch,
             p->compute_units, p->n_heads, mt_dtype_name(p->q_dtype), mt_dtype_name(p->kv_dtype));
    snprintf(name, sizeof name, "crossover-%s-cu%d-h%d-%s-%s.svg", p->arch, p->compute_units, p->n_heads,
             mt_dtype_name(p->q_dtype), mt_dtype_name(p->kv_dtype));
    mt_text one = {0};
    mt_svg_lines(&one, title, "sq: new tokens of the chunk (log2)", "ms", series, 2 * nc, marks, n_marks);
    mt_report_write_file(dir, name, one.buf, one.len);
    mt_report_keep_plot(plots, name, &one);
    mt_text_free(&one);
    (*n_plots)++;
    mt_text_printf(md, "\n### %s, %d CUs, %d heads, %s/%s\n\n", mt_report_md_cell(p->arch), p->compute_units,
                   p->n_heads, mt_dtype_name(p->q_dtype), mt_dtype_name(p->kv_dtype));
    for (int c = 0; c < nc; c++) {
        if (boundaries[c] > 0)
            mt_text_printf(md, "%sContext %d: MHA from sq %d.", c ? " " : "", contexts[c], boundaries[c]);
        else
            mt_text_printf(md, "%sContext %d: MQA at every sq.", c ? " " : "", contexts[c]);
    }
    mt_text_printf(md, "\n\n![%s](%s)\n\n", title, name);
    mt_text_printf(md, "| context | sq | MQA ms | MHA ms | winner | MHA / MQA | MQA absorb ms | MQA attention ms | "
                       "MQA output ms | MHA decompress ms | MHA attention ms | MQA variant | MHA variant | BLAS |\n"
                       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++)
        mt_text_printf(md, "| %d | %d | %.4f | %.4f | %s | %.2f | %.4f | %.4f | %.4f | %.4f | %.4f | %s | %s | %s |\n",
                       p[i].context, p[i].sq, p[i].mqa_ms, p[i].mha_ms, mt_crossover_winner(&p[i]),
                       p[i].mha_ms / p[i].mqa_ms, p[i].mqa_absorb_ms, p[i].mqa_attention_ms, p[i].mqa_output_ms,
                       p[i].mha_decompress_ms, p[i].mha_attention_ms, mt_report_md_cell(p[i].mqa_variant),
                       mt_report_md_cell(p[i].mha_variant), mt_report_md_cell(p[i].blas));
out:
    free(x), free(mqa), free(mha), free(series), free(marks), free(names), free(mark_text);
}

void mt_report_crossover(const mt_crossover_point *p, int n, mt_report_plots *plots, mt_text *md, const char *out_dir,
                         int *n_plots) {
    if (n <= 0) return;
    mt_text_printf(md, "\n## The crossover: MQA or MHA per prefill chunk\n\n"
                       "A chunk of sq new tokens after a context runs absorbed (MQA: q through W_UK, attention over "
                       "the latent cache, out through W_UV) or decompressed (MHA: the latent rows through "
                       "[W_UK | W_UV], then prefill attention), each timed end to end by `mla-tune crossover` "
                       "(docs/prefill.md). Per measured context (a colour): MQA solid, MHA dashed; where the "
                       "runtime switches to MHA at that context (`mlt_prefill_choose_form`, `mla-tune lookup "
                       "--crossover`) is marked. MHA / MQA below 1: MHA is faster.\n");
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && same_group(&p[i], &p[j])) j++;
        group_section(p + i, j - i, plots, md, out_dir, n_plots);
        i = j;
    }
}
