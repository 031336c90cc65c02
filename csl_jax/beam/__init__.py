"""Apache Beam runners for the pipeline's heavy stages (issue 16).

apache-beam is optional and imported only when a stage runs on Beam
(`--runner`): its releases pin protobuf < 7, which the project's
TensorFlow/seqio stack needs; README "Scaling out" has the install.
"""
