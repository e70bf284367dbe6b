/*
 * svg.c - the report's SVG drawing (see svg.h).  Sizes are in pixels of a
 * fixed view box; colours come from a perceptually ordered 5-stop scale.
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
    mt_text_printf(t, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" "
                      "font-family=\"sans-serif\" font-size=\"12\" role=\"img\">\n<title>", w, h, w, h);
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

static double nice_max(double v) {
    if (!(v > 0)) return 1;
    double p = pow(10, floor(log10(v)));
    for (double m = 1; m <= 10; m += m < 2 ? 1 : m < 5 ? 3 : 5)
        if (m * p >= v) return m * p;
    return 10 * p;
}

static void axes(mt_text *t, int left, int top, int pw, int ph, double ymax, const char *y_title) {
    mt_text_printf(t, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left, top, left, top + ph);
    mt_text_printf(t, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left, top + ph, left + pw,
                   top + ph);
    for (int i = 0; i <= 4; i++) {
        double v = ymax * i / 4, y = top + ph - ph * i / 4.0;
        char text[32];
        snprintf(text, sizeof text, "%.3g", v);
        mt_text_printf(t, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", left, y, left + pw, y);
        label(t, left - 6, y + 4, "end", text, NULL);
    }
    mt_text_printf(t, "<text x=\"14\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 14 %d)\">", top + ph / 2,
                   top + ph / 2);
    mt_text_escaped(t, y_title);
    mt_text_printf(t, "</text>\n");
}

void mt_svg_points(mt_text *t, const char *title, const char *x_title, const char *y_title,
                   const char *const *x_labels, const double *y, int n) {
    const int left = 70, top = 40, pw = 60 * (n > 3 ? n : 3), ph = 180;
    int w = left + pw + 30, h = top + ph + 55;
    header(t, w, h, title);
    double ymax = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(y[i])) ymax = fmax(ymax, y[i]);
    ymax = nice_max(ymax);
    axes(t, left, top, pw, ph, ymax, y_title);
    mt_text_printf(t, "<polyline fill=\"none\" stroke=\"#3b528b\" stroke-width=\"2\" points=\"");
    for (int i = 0; i < n; i++)
        if (!isnan(y[i])) mt_text_printf(t, "%.1f,%.1f ", left + pw * (i + 0.5) / n, top + ph - ph * y[i] / ymax);
    mt_text_printf(t, "\"/>\n");
    for (int i = 0; i < n; i++) {
        double x = left + pw * (i + 0.5) / n;
        label(t, x, top + ph + 16, "middle", x_labels[i], NULL);
        if (isnan(y[i])) continue;
        char text[32];
        snprintf(text, sizeof text, "%.4g", y[i]);
        mt_text_printf(t, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#21918c\"/>\n", x, top + ph - ph * y[i] / ymax);
        label(t, x, top + ph - ph * y[i] / ymax - 8, "middle", text, " font-size=\"10\"");
    }
    label(t, left + pw / 2.0, top + ph + 38, "middle", x_title, " font-style=\"italic\"");
    mt_text_printf(t, "</svg>\n");
}

void mt_svg_bars(mt_text *t, const char *title, const char *y_title, const char *const *labels, const double *values,
                 int n, double ceiling, const char *ceiling_label) {
    const int left = 110, top = 40, bar = 34, pw = (bar + 12) * (n > 4 ? n : 4), ph = 200;
    int w = left + pw + 120, h = top + ph + 80;
    header(t, w, h, title);
    double ymax = ceiling;
    for (int i = 0; i < n; i++) ymax = fmax(ymax, values[i]);
    ymax = nice_max(ymax * 1.05);
    axes(t, left, top, pw, ph, ymax, y_title);
    for (int i = 0; i < n; i++) {
        double x = left + 6 + i * (bar + 12), bh = ph * values[i] / ymax;
        mt_text_printf(t, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#3b528b\"/>\n", x,
                       top + ph - bh, bar, bh);
        char text[32];
        snprintf(text, sizeof text, "%.0f", values[i]);
        label(t, x + bar / 2.0, top + ph - bh - 4, "middle", text, " font-size=\"10\"");
        mt_text_printf(t, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\" font-size=\"10\" transform=\"rotate(-45 %.1f %d)\">",
                       x + bar / 2.0, top + ph + 14, x + bar / 2.0, top + ph + 14);
        mt_text_escaped(t, labels[i]);
        mt_text_printf(t, "</text>\n");
    }
    if (ceiling > 0) {
        double y = top + ph - ph * ceiling / ymax;
        mt_text_printf(t, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#c0392b\" stroke-width=\"2\" "
                          "stroke-dasharray=\"6 4\"/>\n", left, y, left + pw, y);
        label(t, left + pw + 4, y + 4, "start", ceiling_label, " fill=\"#c0392b\"");
    }
    mt_text_printf(t, "</svg>\n");
}
