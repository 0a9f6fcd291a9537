import java.util.ArrayDeque;

public class Queue<T> {
    private final ArrayDeque<T> items = new ArrayDeque<>();

    public void enqueue(T item) {
        items.addLast(item);
    }

    public T dequeue() {
        return items.pollFirst();
    }

    public static String reverseWords(String sentence) {
        String[] parts = sentence.trim().split("\\s+");
        StringBuilder out = new StringBuilder();
        for (int i = parts.length - 1; i >= 0; i--) {
            out.append(parts[i]);
            if (i > 0) out.append(' ');
        }
        return out.toString();
    }
}
