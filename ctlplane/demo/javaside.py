"""The simulator's Java side: a DynamicMBean whose values live in Java, compiled once with the JDK's javac.

Why: a Python DynamicMBean (a JPype proxy) enters Python on every attribute read, under one GIL, and
cost ~40 ms of simulator CPU per node scrape; 1,000 nodes could not be served within a 15 s round.
Here RMI threads read a `double[]`/`String[]` snapshot that Python publishes in bulk (one JNI call per
refresh, ValueBank.publish), so a read never enters Python. The loopback socket factory is Java too, so
no RMI thread ever attaches to Python.

The source is kept here, not as a .java file, so it ships with the package; ctlplane/exporter/jvm/javac.py compiles it
into a cache directory keyed by the source's hash (javac takes ~1 s, once).
"""

from __future__ import annotations

from pathlib import Path

from ctlplane.exporter.jvm.javac import compiled_classes

PACKAGE = "ctlplane.demo"
CLASS = f"{PACKAGE}.SimulatedMBean"

# Type codes of attribute slots: J long, B byte (Kafka's BrokerState/ControllerState), D double (these
# three index the numbers array), S string (indexes the strings array).
JAVA_SOURCE = """\
package ctlplane.demo;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.rmi.server.RMIServerSocketFactory;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.ReflectionException;

/** One simulated Kafka MBean: attribute values are slots of a snapshot that Python publishes in bulk. */
public final class SimulatedMBean implements DynamicMBean {

    /** Every value of every node; replaced whole (one volatile write), so a reader sees one moment. */
    public static final class Bank {
        private static final class Snapshot {
            final double[] numbers;
            final String[] strings;

            Snapshot(double[] numbers, String[] strings) {
                this.numbers = numbers;
                this.strings = strings;
            }
        }

        private volatile Snapshot current = new Snapshot(new double[0], new String[0]);

        public void publish(double[] numbers, String[] strings) {
            current = new Snapshot(numbers, strings);
        }
    }

    /** Listen on 127.0.0.1 only. Identity equality on purpose: registry and connector share a port. */
    public static final class LoopbackServerSocketFactory implements RMIServerSocketFactory {
        private final InetAddress loopback;

        public LoopbackServerSocketFactory() throws IOException {
            loopback = InetAddress.getByName("127.0.0.1");
        }

        @Override
        public ServerSocket createServerSocket(int port) throws IOException {
            return new ServerSocket(port, 128, loopback);
        }
    }

    private final Bank bank;
    private final String[] names;
    private final String types;
    private final int[] slots;
    private final MBeanInfo info;

    public SimulatedMBean(Bank bank, String[] names, String types, int[] slots) {
        if (names.length != types.length() || names.length != slots.length) {
            throw new IllegalArgumentException("names, types and slots differ in length");
        }
        this.bank = bank;
        this.names = names.clone();
        this.types = types;
        this.slots = slots.clone();
        MBeanAttributeInfo[] attributes = new MBeanAttributeInfo[names.length];
        for (int i = 0; i < names.length; i++) {
            attributes[i] = new MBeanAttributeInfo(names[i], javaType(types.charAt(i)), names[i], true, false, false);
        }
        this.info = new MBeanInfo(
            "ctlplane.demo.SimulatedMBean", "simulated Kafka MBean", attributes, null, null, null);
    }

    private static String javaType(char type) {
        switch (type) {
            case 'J': return "java.lang.Long";
            case 'B': return "java.lang.Byte";
            case 'D': return "java.lang.Double";
            case 'S': return "java.lang.String";
            default: throw new IllegalArgumentException("type code " + type);
        }
    }

    private Object value(Bank.Snapshot snapshot, int index) {
        int slot = slots[index];
        switch (types.charAt(index)) {
            case 'J': return Long.valueOf((long) snapshot.numbers[slot]);
            case 'B': return Byte.valueOf((byte) snapshot.numbers[slot]);
            case 'D': return Double.valueOf(snapshot.numbers[slot]);
            default: return snapshot.strings[slot];
        }
    }

    private int indexOf(String name) {
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public Object getAttribute(String name) throws AttributeNotFoundException {
        int index = indexOf(name);
        if (index < 0) {
            throw new AttributeNotFoundException(name);
        }
        return value(bank.current, index);
    }

    @Override
    public AttributeList getAttributes(String[] requested) {
        Bank.Snapshot snapshot = bank.current;  // one moment for the whole call
        AttributeList result = new AttributeList();
        for (String name : requested) {
            int index = indexOf(name);
            if (index >= 0) {
                result.add(new Attribute(name, value(snapshot, index)));
            }
        }
        return result;
    }

    @Override
    public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
        throw new AttributeNotFoundException(attribute.getName() + " is read-only");
    }

    @Override
    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList();
    }

    @Override
    public Object invoke(String action, Object[] params, String[] signature) throws ReflectionException {
        throw new ReflectionException(new NoSuchMethodException(action), "no operation " + action);
    }

    @Override
    public MBeanInfo getMBeanInfo() {
        return info;
    }
}
"""


def class_dir() -> Path:
    """A directory holding the compiled classes (compiled on first use), for the JVM's class path."""
    return compiled_classes("demo", {"SimulatedMBean.java": JAVA_SOURCE})
