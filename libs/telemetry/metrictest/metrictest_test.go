package metrictest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSumAddsTheMatchingSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "things_total", Help: "x"}, []string{"kind", "zone"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "level", Help: "x"})
	reg.MustRegister(c, g)
	c.WithLabelValues("a", "1").Add(2)
	c.WithLabelValues("a", "2").Add(3)
	c.WithLabelValues("b", "1").Add(5)
	g.Set(7)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"things_total", nil, 10},
		{"things_total", map[string]string{"kind": "a"}, 5},
		{"things_total", map[string]string{"kind": "a", "zone": "2"}, 3},
		{"things_total", map[string]string{"kind": "c"}, 0},
		{"level", nil, 7},
		{"absent", nil, 0},
	} {
		if got := Sum(t, reg, tc.name, tc.labels); got != tc.want {
			t.Errorf("Sum(%s, %v) = %v, want %v: the series whose labels include the given ones, added", tc.name, tc.labels, got, tc.want)
		}
	}
}
