"""The utilization chart's y axis: fitted to the data with headroom, the
threshold drawn and labelled when it is near the bars, named when it is far
above them. Checked on the matplotlib axes (limits, lines, texts), not pixels."""

import math

import pytest
from matplotlib import pyplot as plt

from kafkactl.planner import report
from kafkactl.planner.options import PlannerOptions

PANELS = ("disk_utilization_ssd", "disk_utilization_hdd", "network_in_utilization", "network_out_utilization")


def built_report(before: float, after: float, options: PlannerOptions, hdd: float | None = None) -> dict:
    """A report as report.build makes it, every broker at the same figures."""
    def state(utilization):
        broker = {**{k: utilization for k in report.BROKER_FIGURES}, "replica_count": 3, "leader_count": 1,
                  "disk_utilization_ssd": utilization, "disk_utilization_hdd": hdd}
        stats = {"min": utilization, "max": utilization, "mean": utilization, "std": 0.0, "max_mean": 1.0}
        return {"resources": {name: stats for name in report.RESOURCES} | {"disk_utilization_hdd": None},
                "violations": {"total": 0, "counts": {}, "examples": []},
                "moves": {"estimated_duration_s": None},
                "brokers": [{"broker_id": b, "rack": None, **broker} for b in (1, 2, 3)], "log_dirs": []}

    bound = {name: {"min": after, "max": after, "mean": after, "std": 0.0, "max_mean": 1.0}
             for name in report.RESOURCES} | {"disk_utilization_hdd": None}
    counts = {"brokers": 3, "eligible_brokers": 3, "log_dirs": 0, "partitions": 1, "replicas": 3, "replica_bytes": 3}
    return report.build("snap", options, counts, state(before), state(after), state(after), bound, {"rounds": 1}, {})


def chart(built: dict):
    figure = report.utilization_figure(built)
    try:
        return {key: (axis.get_ylim(), [line.get_ydata()[0] for line in axis.get_lines()],
                      [text.get_text() for text in axis.texts]) for key, axis in zip(PANELS, figure.axes)}
    finally:
        plt.close(figure)


def test_a_nearly_idle_local_cluster_fills_the_axis_and_names_the_threshold_above_it():
    panels = chart(built_report(0.0012, 0.001, PlannerOptions()))
    limits, lines, texts = panels["disk_utilization_ssd"]
    assert limits == pytest.approx((0.0, 0.0012 * 1.15))
    assert lines == pytest.approx([0.001])          # the perfect-balance line; the threshold is off the axis
    assert texts == ["threshold 0.8 (above the axis)"]
    assert panels["network_out_utilization"][0] == pytest.approx((0.0, 0.0012 * 1.15))


def test_bars_near_the_threshold_show_it_as_a_labelled_line():
    options = PlannerOptions(capacity_threshold=0.7, network_in_threshold=0.6, network_out_threshold=0.9)
    panels = chart(built_report(0.5, 0.4, options))
    assert panels["disk_utilization_ssd"] == (pytest.approx((0.0, 0.7 * 1.15)), pytest.approx([0.7, 0.4]),
                                              ["threshold 0.7"])
    assert panels["network_in_utilization"][:2] == (pytest.approx((0.0, 0.6 * 1.15)), pytest.approx([0.6, 0.4]))
    assert panels["network_out_utilization"][2] == ["threshold 0.9"]


def test_bars_over_the_threshold_stay_on_the_axis():
    limits, lines, _ = chart(built_report(1.3, 0.75, PlannerOptions()))["disk_utilization_ssd"]
    assert limits == pytest.approx((0.0, 1.3 * 1.15)) and lines[0] == pytest.approx(0.8)


def test_a_panel_without_bars_shows_the_threshold():
    # No broker has an HDD dir: the HDD panel has only NaN bars and no bound.
    limits, lines, texts = chart(built_report(0.001, 0.001, PlannerOptions()))["disk_utilization_hdd"]
    assert limits == pytest.approx((0.0, 0.8 * 1.15)) and lines == pytest.approx([0.8])
    assert texts == ["threshold 0.8"]


@pytest.mark.parametrize("values, threshold, expected", [
    ([0.001, 0.002], 0.8, (0.002 * 1.15, False)),
    ([0.3, math.nan], 0.8, (0.8 * 1.15, True)),          # within three times the tallest bar
    ([0.25], 0.8, (0.25 * 1.15, False)),
    ([0.9], 0.8, (0.9 * 1.15, True)),
    ([math.nan, 0.0], 0.5, (0.5 * 1.15, True)),
    ([], 0.8, (0.8 * 1.15, True)),
])
def test_utilization_top(values, threshold, expected):
    top, within = report.utilization_top(values, threshold)
    assert (top, within) == (pytest.approx(expected[0]), expected[1])


def test_the_chart_is_written(tmp_path):
    report.plot_utilization(built_report(0.0012, 0.001, PlannerOptions()), tmp_path / "utilization.png")
    assert (tmp_path / "utilization.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
