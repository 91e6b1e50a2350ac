"""The 'cluster' benchmark family's report, from figures made up here (running it starts two
clusters and takes a minute: `python -m mlpar.bench cluster`)."""

from mlpar.benchmarks import cluster


def figures(ratio_local, ratio_external):
    def rows(ratio):
        return [{"lesson": "05 MapReduce round", "per": "iteration", "measured_s": 0.002 * ratio,
                 "predicted_s": 0.002, "ratio": ratio},
                {"lesson": "06 async parameter server", "per": "update", "measured_s": 0.001,
                 "predicted_s": 0.001 / ratio, "ratio": ratio}]
    return {"clusters": {"LocalCluster (started by the lesson)": rows(ratio_local),
                         "the cluster at tcp://10.0.0.1:8786": rows(ratio_external)},
            "load_average": [0.5, 0.7], "cores": 4}


def test_report_says_which_prediction_met_the_goal_on_which_cluster():
    text = cluster.report(figures(1.1, 1.6))
    local, external = text.split("the cluster at tcp://10.0.0.1:8786")
    assert local.count(" yes ") == 2 and "NO" not in local
    assert external.count(" NO ") == 2 and " yes " not in external
    assert "3.2 ms" in text  # 0.002 s × 1.6, printed in ms


def test_a_prediction_too_slow_is_missed_both_ways():
    text = cluster.report(figures(1 / 1.4, 1.29))
    local, external = text.split("the cluster at tcp://10.0.0.1:8786")
    assert "NO" in local and "NO" not in external
