/* The chart of divergences over the run's span: inline SVG (the page allows
 * no script), a stacked bar per slot of a round width, a colour for each of
 * the largest classes and one for the rest, a count axis with round ticks and
 * a time axis with ticks on round UTC times. */
#include "report/html_escape.h"
#include "report/model.h"

#include <understudy/array.h>
#include <understudy/codec.h>

#include <stdio.h>
#include <string.h>

#define SECOND 1000000LL
#define DAY (86400 * SECOND)

/* Widths a slot or a tick interval may have, in seconds: each a whole
 * number of the unit it reads in, and a day's divisor up to a day. */
static const int64_t round_s[] = {
    1,    2,    5,    10,    15,    30,    60,    120,   300,    600,    900,
    1800, 3600, 7200, 10800, 14400, 21600, 43200, 86400, 172800, 604800, 2419200};
#define N_ROUND UST_ARRAY_SIZE(round_s)

static int64_t floor_to(int64_t us, int64_t width)
{
    int64_t q = us / width;
    return (us % width < 0 ? q - 1 : q) * width;
}

static ust__report_slots slots_of(int64_t first_us, int64_t last_us, int64_t width)
{
    ust__report_slots s = {floor_to(first_us, width), width, 0};
    s.n = (size_t)((last_us - s.origin_us) / width + 1);
    return s;
}

ust__report_slots ust__report_bar_slots(int64_t first_us, int64_t last_us)
{
    if (last_us < first_us)
        last_us = first_us;
    for (size_t i = 0; i < N_ROUND; i++) {
        ust__report_slots s = slots_of(first_us, last_us, round_s[i] * SECOND);
        if (s.n <= UST__REPORT_MAX_BARS)
            return s;
    }
    /* Longer than 48 four-week bars: a whole number of four weeks each. */
    int64_t four_weeks = round_s[N_ROUND - 1] * SECOND;
    int64_t k = (last_us - first_us) / (four_weeks * (UST__REPORT_MAX_BARS - 1)) + 1;
    return slots_of(first_us, last_us, k * four_weeks);
}

ust__report_slots ust__report_day_slots(int64_t first_us, int64_t last_us)
{
    return slots_of(first_us, last_us < first_us ? first_us : last_us, DAY);
}

/* "4 h", "3 h 30 min", "1 d": each unit that is not zero. */
static void put_duration(FILE *f, int64_t us)
{
    static const struct {
        int64_t s;
        const char *unit;
    } units[] = {{86400, "d"}, {3600, "h"}, {60, "min"}, {1, "s"}};
    int64_t s = us / SECOND;
    const char *sep = "";
    for (size_t i = 0; i < UST_ARRAY_SIZE(units); i++) {
        if (s / units[i].s == 0)
            continue;
        fprintf(f, "%s%lld %s", sep, (long long)(s / units[i].s), units[i].unit);
        s %= units[i].s;
        sep = " ";
    }
    if (*sep == '\0')
        fputs("under 1 s", f);
}

/* A tick's label: the date for day ticks; else the time, with the date
 * (month-day) when the axis spans more than one day. */
static void tick_label(int64_t t, int64_t interval, int many_days, char out[32])
{
    char iso[32];
    ust_time_format(t, iso); /* YYYY-MM-DDTHH:MM:SS.ffffffZ */
    if (interval >= DAY)
        snprintf(out, 32, "%.10s", iso);
    else if (many_days)
        snprintf(out, 32, "%.5s %.5s", iso + 5, iso + 11);
    else
        snprintf(out, 32, "%.*s", interval >= 60 * SECOND ? 5 : 8, iso + 11);
}

/* The count axis: a round step (1, 2 or 5 times a power of ten) giving at
 * most five steps, and the top, the first multiple of it at or above peak. */
static int64_t count_step(int64_t peak)
{
    for (int64_t p = 1;; p *= 10)
        for (int k = 0; k < 3; k++) {
            int64_t step = p * (int64_t[]){1, 2, 5}[k];
            if ((peak + step - 1) / step <= 5)
                return step;
        }
}

static const char *const colours[] = {"#d1495b", "#edae49", "#00798c", "#30638e",
                                      "#8f5d9e", "#66a182", "#e07a5f", "#3d405b"};
#define TOP_CLASSES UST_ARRAY_SIZE(colours)
#define OTHER_COLOUR "#9aa0ad"

enum { W = 960, H = 270, LEFT = 64, RIGHT = 20, TOP = 12, BOTTOM = 46 };

typedef struct plot {
    const ust__report_model *m;
    int64_t axis_top;                  /* the count at the top of the plot */
    double bar_w;                      /* pixels */
    double base[UST__REPORT_MAX_BARS]; /* the stack's height so far, pixels */
} plot;

static double y_of(const plot *p, double count)
{
    return TOP + (H - TOP - BOTTOM) * (1.0 - count / (double)p->axis_top);
}

/* One class's bars (counts: one per bar; NULL for the rest, every class
 * past the top ones), stacked on the bars drawn before. */
static void put_series(FILE *f, plot *p, const ust__report_class *c, size_t top,
                       const char *colour)
{
    const ust__report_model *m = p->m;
    fprintf(f, "<g class=series fill=\"%s\"><title>", colour);
    ust__html_esc(f, c ? c->name : "other classes");
    fputs("</title>", f);
    for (size_t b = 0; b < m->bars.n; b++) {
        int64_t n = m->total_buckets[b];
        if (c != NULL)
            n = c->buckets[b];
        else
            for (size_t k = 0; k < top; k++)
                n -= m->classes[k].buckets[b];
        if (n <= 0)
            continue;
        double h = (H - TOP - BOTTOM) * (double)n / (double)p->axis_top;
        p->base[b] += h;
        char at[32];
        tick_label(m->bars.origin_us + (int64_t)b * m->bars.width_us, m->bars.width_us,
                   1, at);
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                "<title>%s: %lld</title></rect>",
                LEFT + (double)b * p->bar_w, y_of(p, 0) - p->base[b], p->bar_w * 0.9, h,
                at, (long long)n);
    }
    fputs("</g>", f);
}

static void put_count_axis(FILE *f, const plot *p, int64_t step)
{
    fputs("<g class=yaxis font-size=11 text-anchor=end>", f);
    for (int64_t v = 0; v <= p->axis_top; v += step) {
        double y = y_of(p, (double)v);
        fprintf(f,
                "<line x1=%d y1=\"%.1f\" x2=%d y2=\"%.1f\" stroke=\"%s\" />"
                "<text class=ytick x=%d y=\"%.1f\">%lld</text>",
                LEFT - 4, y, W - RIGHT, y, v == 0 ? "#889" : "#e3e5ee", LEFT - 8, y + 4,
                (long long)v);
    }
    fprintf(f,
            "<text x=14 y=%d transform=\"rotate(-90 14 %d)\" text-anchor=middle>"
            "divergences</text></g>",
            (H - BOTTOM + TOP) / 2, (H - BOTTOM + TOP) / 2);
}

static void put_time_axis(FILE *f, const plot *p)
{
    const ust__report_slots *bars = &p->m->bars;
    int64_t start = bars->origin_us, end = start + (int64_t)bars->n * bars->width_us;
    size_t i = 0;
    while (i + 1 < N_ROUND && (end - start) / (round_s[i] * SECOND) > 8)
        i++;
    int64_t interval = round_s[i] * SECOND;
    if ((end - start) / interval > 8) /* years: a whole number of four weeks */
        interval *= (end - start) / interval / 8 + 1;
    int many_days = floor_to(start, DAY) != floor_to(end - 1, DAY);
    double px = (double)(W - LEFT - RIGHT) / (double)(end - start);
    fprintf(f, "<g class=xaxis font-size=11 text-anchor=middle>");
    for (int64_t t = floor_to(start + interval - 1, interval); t <= end;
         t += interval) {
        double x = LEFT + (double)(t - start) * px;
        char label[32];
        tick_label(t, interval, many_days, label);
        fprintf(f,
                "<line x1=\"%.1f\" y1=%d x2=\"%.1f\" y2=%d stroke=#889 />"
                "<text class=xtick x=\"%.1f\" y=%d>%s</text>",
                x, H - BOTTOM, x, H - BOTTOM + 5, x, H - BOTTOM + 18, label);
    }
    fprintf(f, "<text x=%d y=%d>time (UTC)</text></g>", (W + LEFT - RIGHT) / 2, H - 8);
}

void ust__report_write_chart(FILE *f, const ust__report_model *m)
{
    fputs("<h2>Divergences over time</h2>", f);
    if (m->divergences == 0) {
        fputs("<p class=muted>No divergence.</p>", f);
        return;
    }
    plot p = {.m = m, .bar_w = (double)(W - LEFT - RIGHT) / (double)m->bars.n};
    int64_t peak = 1;
    for (size_t b = 0; b < m->bars.n; b++)
        if (m->total_buckets[b] > peak)
            peak = m->total_buckets[b];
    int64_t step = count_step(peak);
    p.axis_top = (peak + step - 1) / step * step;
    fputs("<p class=muted>each bar: ", f);
    put_duration(f, m->bars.width_us);
    fprintf(f, "; the highest: %lld divergences</p>", (long long)peak);
    fprintf(f,
            "<svg id=chart xmlns=\"http://www.w3.org/2000/svg\" width=%d height=%d"
            " role=img aria-label=\"divergences over time\">",
            W, H);
    put_count_axis(f, &p, step);
    size_t top = m->n_detailed < TOP_CLASSES ? m->n_detailed : TOP_CLASSES;
    int64_t other = m->divergences;
    for (size_t c = 0; c < top; c++) {
        put_series(f, &p, &m->classes[c], top, colours[c]);
        other -= m->classes[c].count;
    }
    if (other > 0)
        put_series(f, &p, NULL, top, OTHER_COLOUR);
    put_time_axis(f, &p);
    fputs("</svg><p class=legend>", f);
    for (size_t c = 0; c < top; c++) {
        fprintf(f, "<span style=\"background:%s\"></span>", colours[c]);
        ust__html_esc(f, m->classes[c].name);
        fprintf(f, " (%lld)<br>", (long long)m->classes[c].count);
    }
    if (other > 0)
        fprintf(f, "<span style=\"background:%s\"></span>other classes (%lld)<br>",
                OTHER_COLOUR, (long long)other);
    fputs("</p>", f);
}
