"""The scenarios wing: the reference runtime's pipeline, one way.

`_run` boots a scenario on `harness.agent`; `_record` turns the run into the four files that
`_formats` defines (with `_validation` for a scenario that decodes but cannot run); `_replay`
re-runs them on the recorded answers and checks the rebuild invariant; `_pins` holds the header
pins; `_shuffle` runs them under other registration orders; `_check` is the one orchestration of
all of it (record, replay, update, shuffle, judge) behind the CLI, the plugin and the demo;
`_demo` says where the shipped scenarios are read from. Nothing here is public: the CLI and the
pytest plugin are how a user meets it.
"""
