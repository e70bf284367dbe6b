/*
 * crossover_json.c - see crossover_json.h.
 */
#include "crossover_json.h"

#include <stdio.h>

#include "json.h"

const char *mt_crossover_winner(const mt_crossover_point *p) { return p->mha_ms <= p->mqa_ms ? "MHA" : "MQA"; }

void mt_crossover_json(const mt_crossover_point *p) {
    printf("{\"arch\": ");
    mt_json_string(stdout, p->arch);
    printf(", \"compute_units\": %d, \"device\": ", p->compute_units);
    mt_json_string(stdout, p->device_name);
    printf(", \"heads\": %d, \"q_dtype\": \"%s\", \"kv_dtype\": \"%s\", \"sq\": %d, \"context\": %d", p->n_heads,
           mt_dtype_name(p->q_dtype), mt_dtype_name(p->kv_dtype), p->sq, p->context);
    const double times[] = {p->mqa_ms, p->mha_ms, p->mqa_absorb_ms, p->mqa_attention_ms, p->mqa_output_ms,
                            p->mha_decompress_ms, p->mha_attention_ms};
    static const char *const names[] = {"mqa_ms", "mha_ms", "mqa_absorb_ms", "mqa_attention_ms", "mqa_output_ms",
                                        "mha_decompress_ms", "mha_attention_ms"};
    for (int i = 0; i < 7; i++) {
        printf(", \"%s\": ", names[i]);
        mt_json_number(stdout, times[i]);
    }
    printf(", \"winner\": \"%s\"", mt_crossover_winner(p));
    const struct { const char *name, *text; } texts[] = {
        {"mqa_variant", p->mqa_variant}, {"mha_variant", p->mha_variant}, {"blas", p->blas},
        {"measured_at", p->measured_at}, {"db", p->source},
    };
    for (int i = 0; i < 5; i++) {
        printf(", \"%s\": ", texts[i].name);
        mt_json_string(stdout, texts[i].text);
    }
    printf("}");
}
