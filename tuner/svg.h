/*
 * svg.h - a growing text buffer and the few SVG shapes the report draws
 * (heat maps, point/line charts, bar charts).  Plain SVG 1.1 text: no
 * scripts, no external references, so pages that inline it fetch nothing.
 */
#ifndef MT_SVG_H
#define MT_SVG_H

#include <stddef.h>

typedef struct mt_text {
    char *buf;
    size_t len, cap;
} mt_text;

void mt_text_printf(mt_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mt_text_escaped(mt_text *t, const char *s);   /* XML-escaped */
void mt_text_free(mt_text *t);

/* A heat map: rows x cols cells, values (NAN = no data) coloured on a
 * sequential scale, each cell labelled with `labels[r * cols + c]`. */
void mt_svg_heatmap(mt_text *t, const char *title, const char *row_title, const char *const *row_labels, int rows,
                    const char *col_title, const char *const *col_labels, int cols, const double *values,
                    const char *const *labels);

/* Every drawing scales down with its page (viewBox, max-width 100%). */

/* Points joined by lines: n categories on x (labels), one value each (NAN
 * skipped); y from 0, or logarithmic when the values span decades.  y_lo
 * and y_hi (both NULL: none) draw an error bar per point. */
void mt_svg_points(mt_text *t, const char *title, const char *x_title, const char *y_title,
                   const char *const *x_labels, const double *y, const double *y_lo, const double *y_hi, int n);

/* One line of a line chart: n points (x > 0, increasing), drawn in the
 * categorical colour `colour` (0, 1, ...: the same index, the same colour),
 * solid or dashed; `label` names it in the legend (NULL: left out). */
typedef struct mt_svg_series {
    const double *x, *y;
    int n;
    int colour;
    int dashed;
    const char *label;
} mt_svg_series;

/* A vertical mark at x in a series' colour, labelled at the top. */
typedef struct mt_svg_mark {
    double x;
    int colour;
    const char *label;
} mt_svg_mark;

/* Lines against x on a log2 axis (ticks at the powers of two), y from 0 or
 * logarithmic as mt_svg_points; a legend at the right; marks drawn over. */
void mt_svg_lines(mt_text *t, const char *title, const char *x_title, const char *y_title, const mt_svg_series *series,
                  int n_series, const mt_svg_mark *marks, int n_marks);

/* Bars with error bars from lo to hi (NULL: none) and a labelled dashed
 * line at `ceiling` (0: none); log scale when the values span decades. */
void mt_svg_bars(mt_text *t, const char *title, const char *y_title, const char *const *labels, const double *values,
                 const double *lo, const double *hi, int n, double ceiling, const char *ceiling_label);

#endif
