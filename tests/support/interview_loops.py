"""Loop texts (both named ``talk``) and a scripted interview that the interview tests share."""

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

# The script that answers TALK_LOOP's interview (two rounds, the challenge at round 2) and builds.
TALK_SCRIPT = """
stages:
  build:
    - text: built it
default_verdict: {passed: true, reasons: [fine]}
interview:
  goal: Review imports
  components: [Ingestion, Export]
  rounds:
    1:
      question: "Which formats arrive?"
      assessment:
        scores: {Ingestion: {goal: .9, constraints: .9, criteria: .9}}
        criteria: {Ingestion: ["Given a CSV of 3 rows, when imported, then 3 rows are stored"]}
    2:
      challenge: {probe: "Do we need an export at all?"}
      assessment:
        scores: {Export: {goal: .9, constraints: .9, criteria: .8}}
        criteria: {Export: ["Given 2 rows, when exported, then the CSV has 3 lines"]}
        challenge_outcome: the export stays, CSV only
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


#: A scripted interview where Ingestion never gets clear (ambiguity .50 against a .15 target): the interview goes past round 10.
STUCK = """
components: [Ingestion, Export]
rounds:
  default:
    assessment:
      scores:
        Ingestion: {goal: .5, constraints: .5, criteria: .5}
        Export: {goal: .9, constraints: .9, criteria: .9}
      criteria: {Export: ["Given a report, when exported, then it is CSV"]}
"""
