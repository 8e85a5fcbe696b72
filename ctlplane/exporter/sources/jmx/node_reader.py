"""A node's read in one call from Python: the Java side, compiled from this source (ctlplane/exporter/jvm/javac.py).

Why: the Python loop over a node's MBeans crossed into Java ~200 times per read (a getAttributes per
MBean, then the AttributeList's iterator, each attribute's name and value), and JPype releases and takes
the GIL back at every crossing. Alone that costs ~2 ms of CPU per read; with 16 scrape workers on 2
cores the GIL changes hands at every crossing and the same read cost ~9 ms (bench/fleet.py, docs/demo.md
"Exporter CPU per read"). Here the RPCs, the value conversions and the deadline run in Java; Python
makes one call per node read and reads back a few primitive arrays.

What it returns is exactly what the Python loop made of the same answers (tests/integration/
test_node_reader.py compares the two on hostile values): a Number is its doubleValue(), anything else
its toString() (a Boolean is "true"/"false"), null is absent, a text longer than the cap (in code
points, as Python counts) is left out and reported, an attribute named twice keeps the last usable one,
an MBean unregistered since it was resolved is reported GONE, one whose value the deserialisation
filter refused is reported REJECTED; any other failure is thrown, as from the RPC itself.
"""

from __future__ import annotations

from pathlib import Path

from ctlplane.exporter.jvm.javac import compiled_classes

CLASS = "ctlplane.jmx.NodeReader"

# per MBean (Result.status)
READ, GONE, REJECTED = 0, 1, 2
# per MBean and requested attribute (Result.kinds)
ABSENT, NUMBER, TEXT, TOO_LONG = 0, 1, 2, 3

JAVA_SOURCE = """\
package ctlplane.jmx;

import java.io.IOException;
import java.rmi.UnmarshalException;
import java.util.HashMap;
import java.util.Map;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;

/** One node read in one call from Python (see node_reader.py). */
public final class NodeReader {
    private NodeReader() {}

    /** The read's time budget ran out before an RPC: none is started after it. */
    public static final class DeadlineExceeded extends Exception {
        private static final long serialVersionUID = 1L;

        public DeadlineExceeded() {
            super("read deadline exceeded");
        }
    }

    /** Per MBean a status (and why, if REJECTED); per MBean and requested attribute, row-major, a kind
     *  and a number (NUMBER; the text's length if TOO_LONG) or a text (TEXT). */
    public static final class Result {
        public final byte[] status;
        public final String[] problems;
        public final byte[] kinds;
        public final double[] numbers;
        public final String[] texts;

        Result(byte[] status, String[] problems, int cells) {
            this.status = status;
            this.problems = problems;
            this.kinds = new byte[cells];
            this.numbers = new double[cells];
            this.texts = new String[cells];
        }
    }

    public static Result read(
            MBeanServerConnection server, ObjectName[] names, String[][] attributes, long budgetNanos, int maxChars)
            throws IOException, JMException, DeadlineExceeded {
        long started = System.nanoTime();
        int[] offsets = new int[names.length + 1];
        for (int i = 0; i < names.length; i++) {
            offsets[i + 1] = offsets[i] + attributes[i].length;
        }
        Result result = new Result(new byte[names.length], new String[names.length], offsets[names.length]);
        Map<String[], Map<String, Integer>> columns = new HashMap<>();
        for (int i = 0; i < names.length; i++) {
            if (System.nanoTime() - started > budgetNanos) {
                throw new DeadlineExceeded();
            }
            AttributeList answer;
            try {
                answer = server.getAttributes(names[i], attributes[i]);
            } catch (InstanceNotFoundException gone) {
                result.status[i] = 1;
                continue;
            } catch (UnmarshalException refused) {
                Throwable cause = refused.getCause();
                if (cause == null || !String.valueOf(cause).contains("REJECTED")) {
                    throw refused;
                }
                result.status[i] = 2;
                result.problems[i] = String.valueOf(cause);
                continue;
            }
            Map<String, Integer> column = columns.computeIfAbsent(attributes[i], NodeReader::columnsOf);
            for (Object item : answer) {
                if (!(item instanceof Attribute)) {
                    continue;
                }
                Attribute attribute = (Attribute) item;
                Integer j = column.get(attribute.getName());
                Object value = attribute.getValue();
                if (j == null || value == null) {
                    continue;
                }
                int cell = offsets[i] + j;
                if (value instanceof Number) {
                    result.kinds[cell] = 1;
                    result.numbers[cell] = ((Number) value).doubleValue();
                    result.texts[cell] = null;
                    continue;
                }
                String text = value.toString();
                if (text == null) {
                    continue;
                }
                if (text.length() > maxChars && text.codePointCount(0, text.length()) > maxChars) {
                    if (result.kinds[cell] == 0) {
                        result.kinds[cell] = 3;
                        result.numbers[cell] = text.codePointCount(0, text.length());
                    }
                    continue;
                }
                result.kinds[cell] = 2;
                result.texts[cell] = text;
            }
        }
        return result;
    }

    private static Map<String, Integer> columnsOf(String[] attributes) {
        Map<String, Integer> column = new HashMap<>();
        for (int j = 0; j < attributes.length; j++) {
            column.put(attributes[j], j);
        }
        return column;
    }
}
"""


def class_dir() -> Path:
    """The compiled class (compiled on first use), for the JVM's class path. Raises JavacError."""
    return compiled_classes("exporter-reader", {"NodeReader.java": JAVA_SOURCE})
