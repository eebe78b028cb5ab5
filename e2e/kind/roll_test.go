package kind

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/e2e/faultload"
	"github.com/customerapi/platform/libs/testwait"
)

// The gateway Deployment rolled to a new image tag by `helm upgrade` while reads keep
// coming through its Service: every read is answered 200 or, at worst, 503 in the
// envelope (never a 500 or a broken connection), and the new pods run the new tag.
func TestFaultGatewayRolledUnderReads(t *testing.T) {
	k := env(t)
	if k.rollTag == "" || k.chart == "" {
		t.Fatal("KIND_ROLL_TAG and KIND_CHART are required: the gateway's new image tag and the chart")
	}
	sel := component("gateway")
	old, err := k.pods(sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range old {
		if strings.HasSuffix(p.Image, ":"+k.rollTag) {
			t.Fatalf("gateway pod %s already runs %s: the roll would change nothing", p.Name, p.Image)
		}
	}
	c := k.api(t)
	topic := apitest.MustStatus(t, c.Do("POST", "/v0/topics", map[string]any{"title": "Read through a rolling gateway"}), 201)
	path := "/v0/topics/" + topic["topicId"].(string)

	rd := startReaders(c, path, 4)
	defer rd.stop()
	testwait.For(t, time.Minute, "100 reads before the roll", func() (bool, string) {
		n := rd.result().Writes
		return n >= 100, fmt.Sprintf("%d reads", n)
	})
	began := time.Now()
	if _, err := k.helm(6*time.Minute, "upgrade", k.release, k.chart, "--reuse-values",
		"--set", "gateway.image.tag="+k.rollTag, "--wait", "--timeout", "5m"); err != nil {
		t.Fatal(err)
	}
	fresh := k.waitReplaced(t, sel, old, len(old), 2*time.Minute)
	rolled := time.Since(began)
	during := rd.result().Writes
	time.Sleep(3 * time.Second)
	rd.stop()
	r := rd.result()
	for _, p := range fresh {
		if !strings.HasSuffix(p.Image, ":"+k.rollTag) {
			t.Errorf("gateway pod %s runs %s after the upgrade, not tag %s", p.Name, p.Image, k.rollTag)
		}
	}
	line := fmt.Sprintf("FAULT gateway rolled to %s (%s -> %s): reads=%d ok=%d 503s=%d other=%d answers=%v rolled in %s",
		k.rollTag, strings.Join(names(old), ","), strings.Join(names(fresh), ","), r.Writes, r.Statuses[200],
		r.Statuses[503], len(r.Bad), r.Statuses, secs(rolled))
	if !r.LastFailure.IsZero() {
		line += fmt.Sprintf("; failures from +%s to +%s", secs(r.FirstFailure.Sub(began)), secs(r.LastFailure.Sub(began)))
	}
	t.Log(line)
	fmt.Println(line)
	for i, b := range r.Bad {
		if i == 5 {
			t.Errorf("... %d answers in all were neither 200 nor 503 in the envelope", len(r.Bad))
			break
		}
		t.Errorf("every read through a rolling gateway must be 200 or 503 in the envelope: %s", b)
	}
	if r.Writes-during < 10 {
		t.Errorf("only %d reads after the roll: the readers stalled", r.Writes-during)
	}
}

// readers GET one path until stopped; their result reuses faultload.Result (Writes
// counts the reads; Acked stays empty).
type readers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	r      faultload.Result
}

func startReaders(c *apitest.Client, path string, n int) *readers {
	ctx, cancel := context.WithCancel(context.Background())
	rd := &readers{cancel: cancel, r: faultload.Result{Statuses: map[int]int{}}}
	for range n {
		rd.wg.Add(1)
		go func() {
			defer rd.wg.Done()
			for ctx.Err() == nil {
				//nolint:contextcheck // the client's calls take no context: the loop checks ctx between them
				resp, err := c.Try("GET", path, nil)
				now := time.Now()
				rd.mu.Lock()
				rd.r.Writes++
				switch {
				case err != nil:
					rd.r.Bad = append(rd.r.Bad, err.Error())
				default:
					rd.r.Statuses[resp.Status]++
					if resp.Status != 200 && resp.Status != 503 {
						rd.r.Bad = append(rd.r.Bad, resp.String())
					}
				}
				if err != nil || resp.Status != 200 {
					rd.r.Failed++
					if rd.r.FirstFailure.IsZero() {
						rd.r.FirstFailure = now
					}
					rd.r.LastFailure = now
				}
				rd.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	return rd
}

func (rd *readers) stop() {
	rd.cancel()
	rd.wg.Wait()
}

func (rd *readers) result() faultload.Result {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	r := rd.r
	r.Statuses = map[int]int{}
	for k, v := range rd.r.Statuses {
		r.Statuses[k] = v
	}
	r.Bad = append([]string(nil), rd.r.Bad...)
	return r
}
