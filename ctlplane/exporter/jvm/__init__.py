"""The JVM every read runs in: the host's Java checked before the first read (runtime.py), and the Java
classes ctlplane ships as source compiled for its class path (javac.py)."""
