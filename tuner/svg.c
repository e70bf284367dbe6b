/*
 * svg.c - the report's SVG drawing (see svg.h).  Sizes are in pixels of a
 * fixed view box; colours come from a perceptually ordered 5-stop scale
 * (heat maps) or a categorical palette (lines that are told apart).
 */
#define _GNU_SOURCE
#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mt_text_printf(mt_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->cap ? t->cap : 4096);
        while (cap < t->len + (size_t)n + 1) cap *= 2;
        char *grown = realloc(t->buf, cap);
        if (!grown) return;
        t->buf = grown;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void mt_text_escaped(mt_text *t, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<': mt_text_printf(t, "&lt;"); break;
        case '>': mt_text_printf(t, "&gt;"); break;
        case '&': mt_text_printf(t, "&amp;"); break;
        case '"': mt_text_printf(t, "&quot;"); break;
        default: mt_text_printf(t, "%c", *s);
        }
    }
}

void mt_text_free(mt_text *t) {
    free(t->buf);
    t->buf = NULL;
    t->len = t->cap = 0;
}

/* viridis-like stops, low to high */
static void colour(double f, char out[8]) {
    static const int stops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    if (!(f >= 0)) f = 0;
    if (f > 1) f = 1;
    double x = f * 4;
    int i = (int)x;
    if (i > 3) i = 3;
    double u = x - i;
    int rgb[3];
    for (int k = 0; k < 3; k++) rgb[k] = (int)lround(stops[i][k] + u * (stops[i + 1][k] - stops[i][k]));
    snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

static void header(mt_text *t, int w, int h, const char *title) {
    /* width/height give the natural size; the style lets a narrower page
     * scale the drawing down through its viewBox instead of clipping it */
    mt_text_printf(t, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                      "style=\"max-width:100%%;height:auto\" font-family=\"sans-serif\" font-size=\"12\" "
                      "role=\"img\">\n<title>", w, h, w, h);
    mt_text_escaped(t, title);
    mt_text_printf(t, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
                      "<text x=\"%d\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">", w, h, w / 2);
    mt_text_escaped(t, title);
    mt_text_printf(t, "</text>\n");
}

static void label(mt_text *t, double x, double y, const char *anchor, const char *text, const char *extra) {
    mt_text_printf(t, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y, anchor, extra ? extra : "");
    mt_text_escaped(t, text);
    mt_text_printf(t, "</text>\n");
}

void mt_svg_heatmap(mt_text *t, const char *title, const char *row_title, const char *const *row_labels, int rows,
                    const char *col_title, const char *const *col_labels, int cols, const double *values,
                    const char *const *labels) {
    const int cell_w = 90, cell_h = 34, left = 110, top = 60;
    int w = left + cols * cell_w + 30, h = top + rows * cell_h + 50;
    if (w < 560) w = 560;  /* room for the title */
    header(t, w, h, title);
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < rows * cols; i++)
        if (!isnan(values[i])) lo = fmin(lo, values[i]), hi = fmax(hi, values[i]);
    for (int c = 0; c < cols; c++) label(t, left + c * cell_w + cell_w / 2.0, top - 8, "middle", col_labels[c], NULL);
    label(t, left + cols * cell_w / 2.0, top - 26, "middle", col_title, " font-style=\"italic\"");
    for (int r = 0; r < rows; r++) {
        label(t, left - 8, top + r * cell_h + cell_h / 2.0 + 4, "end", row_labels[r], NULL);
        for (int c = 0; c < cols; c++) {
            double v = values[r * cols + c];
            char fill[8] = "#eeeeee";
            if (!isnan(v)) colour(hi > lo ? (v - lo) / (hi - lo) : 0.5, fill);
            mt_text_printf(t, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"white\"/>\n",
                           left + c * cell_w, top + r * cell_h, cell_w, cell_h, fill);
            const char *text = labels && labels[r * cols + c] ? labels[r * cols + c] : (isnan(v) ? "-" : "");
            /* dark text on the light end of the scale */
            int light = !isnan(v) && hi > lo && (v - lo) / (hi - lo) > 0.6;
            label(t, left + c * cell_w + cell_w / 2.0, top + r * cell_h + cell_h / 2.0 + 4, "middle", text,
                  light || isnan(v) ? " fill=\"black\"" : " fill=\"white\"");
        }
    }
    mt_text_printf(t, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-style=\"italic\" "
                      "transform=\"rotate(-90 %d %d)\">", 14, top + rows * cell_h / 2, 14, top + rows * cell_h / 2);
    mt_text_escaped(t, row_title);
    mt_text_printf(t, "</text>\n</svg>\n");
}

/* A y scale: linear from 0, or logarithmic when the values span more than
 * a decade and a half (a linear axis over 0.8..51 ms flattens every
 * contender against the floor). */
typedef struct scale {
    double lo, hi;   /* axis ends (log: powers of ten) */
    int log;
    int top, ph;     /* plot area, pixels */
} scale;

static double y_of(const scale *s, double v) {
    double f = s->log ? (log10(v) - log10(s->lo)) / (log10(s->hi) - log10(s->lo)) : v / s->hi;
    if (!(f >= 0)) f = 0;  /* (log of a value at or below the floor) */
    return s->top + s->ph - s->ph * f;
}

static double nice_max(double v) {
    if (!(v > 0)) return 1;
    double p = pow(10, floor(log10(v)));
    for (double m = 1; m <= 10; m += m < 2 ? 1 : m < 5 ? 3 : 5)
        if (m * p >= v) return m * p;
    return 10 * p;
}

static scale make_scale(const double *lo_v, const double *hi_v, int n, double extra, int top, int ph) {
    double lo = INFINITY, hi = extra > 0 ? extra : 0;
    for (int i = 0; i < n; i++) {
        if (!isnan(lo_v[i]) && lo_v[i] > 0) lo = fmin(lo, lo_v[i]);
        if (!isnan(hi_v[i])) hi = fmax(hi, hi_v[i]);
    }
    scale s = {.lo = 0, .hi = nice_max(hi * 1.05), .log = 0, .top = top, .ph = ph};
    if (isfinite(lo) && lo > 0 && hi / lo > 30) {
        s.log = 1;
        s.lo = pow(10, floor(log10(lo)));
        s.hi = pow(10, ceil(log10(hi * 1.05)));
    }
    return s;
}

/* Tick text a person reads: 5000 not "5e+03", 0.05 not "5e-02". */
static void tick_text(double v, char *out, size_t size) {
    if (v == 0) snprintf(out, size, "0");
    else if (fabs(v) >= 1000) snprintf(out, size, "%.0f", v);
    else if (fabs(v) >= 1) snprintf(out, size, "%.4g", v);
    else {
        int digits = (int)ceil(-log10(fabs(v))) + 1;
        snprintf(out, size, "%.*f", digits > 8 ? 8 : digits, v);
        /* trailing zeros say nothing */
        char *end = out + strlen(out) - 1;
        while (end > out && *end == '0' && strchr(out, '.')) *end-- = '\0';
    }
}

static void axes(mt_text *t, int left, const scale *s, int pw, const char *y_title) {
    int top = s->top, ph = s->ph;
    mt_text_printf(t, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left, top, left, top + ph);
    mt_text_printf(t, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left, top + ph, left + pw,
                   top + ph);
    double ticks[64];
    int n = 0;
    if (s->log) {
        int decades = (int)lround(log10(s->hi / s->lo));
        for (double d = s->lo; d <= s->hi * 1.001 && n < 60; d *= 10) {
            ticks[n++] = d;
            if (decades <= 3 && d * 2 < s->hi) ticks[n++] = d * 2, ticks[n++] = d * 5;
        }
    } else {
        for (int i = 0; i <= 4; i++) ticks[n++] = s->hi * i / 4;
    }
    for (int i = 0; i < n; i++) {
        if (ticks[i] > s->hi * 1.001) continue;
        double y = y_of(s, ticks[i]);
        char text[32];
        tick_text(ticks[i], text, sizeof text);
        mt_text_printf(t, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", left, y, left + pw, y);
        label(t, left - 6, y + 4, "end", text, NULL);
    }
    char title[160];
    snprintf(title, sizeof title, "%s%s", y_title, s->log ? " (log scale)" : "");
    mt_text_printf(t, "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 14 %d)\">", top + ph / 2,
                   top + ph / 2);
    mt_text_escaped(t, title);
    mt_text_printf(t, "</text>\n");
}

/* An error bar from lo to hi at x (NAN ends: none). */
static void whisker(mt_text *t, const scale *s, double x, double lo, double hi) {
    if (isnan(lo) || isnan(hi) || !(hi > lo)) return;
    double y1 = y_of(s, lo), y2 = y_of(s, hi);
    mt_text_printf(t, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" stroke=\"#222\" fill=\"none\"/>\n", x,
                   y1, y2, x - 4, y1, x + 4, x - 4, y2, x + 4);
}

void mt_svg_points(mt_text *t, const char *title, const char *x_title, const char *y_title,
                   const char *const *x_labels, const double *y, const double *y_lo, const double *y_hi, int n) {
    const int left = 80, top = 40, pw = 60 * (n > 3 ? n : 3), ph = 180;
    int w = left + pw + 30, h = top + ph + 55;
    if (w < 420) w = 420;  /* room for the title */
    header(t, w, h, title);
    scale s = make_scale(y_lo ? y_lo : y, y_hi ? y_hi : y, n, 0, top, ph);
    axes(t, left, &s, pw, y_title);
    mt_text_printf(t, "<polyline fill=\"none\" stroke=\"#3b528b\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < n; i++)
        if (!isnan(y[i])) mt_text_printf(t, "%.1f,%.1f ", left + pw * (i + 0.5) / n, y_of(&s, y[i]));
    mt_text_printf(t, "\"/>\n");
    for (int i = 0; i < n; i++) {
        double x = left + pw * (i + 0.5) / n;
        label(t, x, top + ph + 16, "middle", x_labels[i], NULL);
        if (isnan(y[i])) continue;
        if (y_lo && y_hi) whisker(t, &s, x, y_lo[i], y_hi[i]);
        char text[32];
        tick_text(y[i], text, sizeof text);
        mt_text_printf(t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#21918c\"/>\n", x, y_of(&s, y[i]));
        label(t, x + 7, y_of(&s, y[i]) - 6, "start", text, " font-size=\"10\"");
    }
    label(t, left + pw / 2.0, top + ph + 38, "middle", x_title, " font-style=\"italic\"");
    mt_text_printf(t, "</svg>\n");
}

void mt_svg_bars(mt_text *t, const char *title, const char *y_title, const char *const *labels, const double *values,
                 const double *lo, const double *hi, int n, double ceiling, const char *ceiling_label) {
    /* the rotated labels hang below the axis: room for the longest */
    size_t longest = 0;
    for (int i = 0; i < n; i++) longest = strlen(labels[i]) > longest ? strlen(labels[i]) : longest;
    const int left = 80, top = 40, bar = 26, gap = 10, pw = (bar + gap) * (n > 4 ? n : 4), ph = 220;
    int bottom = 30 + (int)(longest * 6.2 * 0.72);
    int w = left + pw + 40, h = top + ph + bottom;
    if (w < 480) w = 480;
    header(t, w, h, title);
    scale s = make_scale(lo ? lo : values, hi ? hi : values, n, ceiling, top, ph);
    axes(t, left, &s, pw, y_title);
    for (int i = 0; i < n; i++) {
        double x = left + gap / 2.0 + i * (bar + gap), y = y_of(&s, values[i]);
        mt_text_printf(t, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#3b528b\"/>\n", x, y, bar,
                       top + ph - y);
        if (lo && hi) whisker(t, &s, x + bar / 2.0, lo[i], hi[i]);
        mt_text_printf(t, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\" font-size=\"10\" transform=\"rotate(-45 %.1f %d)\">",
                       x + bar / 2.0, top + ph + 12, x + bar / 2.0, top + ph + 12);
        mt_text_escaped(t, labels[i]);
        mt_text_printf(t, "</text>\n");
    }
    if (ceiling > 0) {
        double y = y_of(&s, ceiling);
        mt_text_printf(t, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#c0392b\" stroke-width=\"2\" "
                          "stroke-dasharray=\"6 4\"/>\n", left, y, left + pw, y);
        /* the label sits on the line, inside the plot, so it is never cut */
        char text[128];
        snprintf(text, sizeof text, "ceiling: %s", ceiling_label);
        label(t, left + 6, y - 5, "start", text, " fill=\"#c0392b\" font-size=\"11\"");
    }
    mt_text_printf(t, "</svg>\n");
}

/* Tableau's ten categorical colours: told apart on white and in print. */
static const char *category_colour(int i) {
    static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    return palette[(i % 10 + 10) % 10];
}

void mt_svg_lines(mt_text *t, const char *title, const char *x_title, const char *y_title, const mt_svg_series *series,
                  int n_series, const mt_svg_mark *marks, int n_marks) {
    const int left = 80, top = 40, pw = 560, ph = 260, legend = 200;
    int w = left + pw + legend, h = top + ph + 55;
    int legend_rows = 0;
    for (int i = 0; i < n_series; i++) legend_rows += series[i].label != NULL;
    if (top + 16 * legend_rows + 20 > h) h = top + 16 * legend_rows + 20;
    header(t, w, h, title);
    /* the y scale from every point; x as log2, whole octaves */
    int total = 0;
    double x_lo = INFINITY, x_hi = 0;
    for (int i = 0; i < n_series; i++) total += series[i].n;
    double *ys = calloc((size_t)(total > 0 ? total : 1), sizeof *ys);
    if (!ys) return;
    int k = 0;
    for (int i = 0; i < n_series; i++)
        for (int j = 0; j < series[i].n; j++) {
            ys[k++] = series[i].y[j];
            if (series[i].x[j] > 0) x_lo = fmin(x_lo, series[i].x[j]), x_hi = fmax(x_hi, series[i].x[j]);
        }
    scale s = make_scale(ys, ys, total, 0, top, ph);
    free(ys);
    double lo2 = isfinite(x_lo) ? floor(log2(x_lo)) : 0, hi2 = x_hi > 0 ? ceil(log2(x_hi)) : 1;
    if (hi2 <= lo2) hi2 = lo2 + 1;
#define X_OF(v) (left + pw * (log2(v) - lo2) / (hi2 - lo2))
    axes(t, left, &s, pw, y_title);
    for (double e = lo2; e <= hi2; e++) {
        char text[32];
        snprintf(text, sizeof text, "%.0f", pow(2, e));
        double x = X_OF(pow(2, e));
        mt_text_printf(t, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eeeeee\"/>\n", x, top, x,
                       top + ph);
        label(t, x, top + ph + 16, "middle", text, NULL);
    }
    label(t, left + pw / 2.0, top + ph + 38, "middle", x_title, " font-style=\"italic\"");
    for (int i = 0; i < n_series; i++) {
        const mt_svg_series *r = &series[i];
        const char *c = category_colour(r->colour);
        mt_text_printf(t, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", c,
                       r->dashed ? " stroke-dasharray=\"7 4\"" : "");
        for (int j = 0; j < r->n; j++)
            if (r->x[j] > 0 && !isnan(r->y[j])) mt_text_printf(t, "%.1f,%.1f ", X_OF(r->x[j]), y_of(&s, r->y[j]));
        mt_text_printf(t, "\"/>\n");
        for (int j = 0; j < r->n; j++)
            if (r->x[j] > 0 && !isnan(r->y[j]))
                mt_text_printf(t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" stroke=\"%s\"/>\n",
                               X_OF(r->x[j]), y_of(&s, r->y[j]), r->dashed ? "white" : c, c);
    }
    for (int i = 0; i < n_marks; i++) {
        if (!(marks[i].x > 0)) continue;
        const char *c = category_colour(marks[i].colour);
        double x = X_OF(marks[i].x);
        mt_text_printf(t, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"2 3\"/>\n",
                       x, top, x, top + ph, c);
        char fill[40];
        snprintf(fill, sizeof fill, " fill=\"%s\" font-size=\"10\"", c);
        label(t, x + 3, top + 10 + 12 * i, "start", marks[i].label, fill);
    }
#undef X_OF
    int row = 0;
    for (int i = 0; i < n_series; i++) {
        if (!series[i].label) continue;
        double y = top + 8 + 16 * row++, x = left + pw + 16;
        mt_text_printf(t, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", x,
                       y, x + 24, y, category_colour(series[i].colour),
                       series[i].dashed ? " stroke-dasharray=\"7 4\"" : "");
        label(t, x + 30, y + 4, "start", series[i].label, " font-size=\"11\"");
    }
    mt_text_printf(t, "</svg>\n");
}
