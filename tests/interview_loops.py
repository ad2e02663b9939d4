"""Loop texts the interview tests share (both are named ``talk``)."""

# An interview stage with a challenge at round 2, then a stage that consumes its spec.
TALK_LOOP = """
name: talk
max_iterations: 5
stages:
  - id: interview
    interview: {mode: deep, challenges: [contrarian@2]}
    produces: [spec.md, interview-log.md]
    gate: {mode: ai+human, check: the stop condition holds}
  - id: build
    consumes: [spec.md]
    gate: {mode: ai, check: built}
"""

# The interview alone, without challenges.
INTERVIEW_ONLY_LOOP = """\
name: talk
max_iterations: 3
stages:
  - id: interview
    interview: {mode: deep, challenges: []}
    produces: [spec.md, interview-log.md]
    gate: {mode: ai+human, check: the stop condition holds}
"""
