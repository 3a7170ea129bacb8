package dev.handoff.spring.autoconfigure;

import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.MessageHandler;
import dev.handoff.spring.HandoffListener;
import dev.handoff.spring.HandoffStartupException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Finds the {@link HandoffListener} methods of the application's beans as they are created, and makes each a
 * {@link MessageHandler} that calls it through the bean (its proxy, if any, so that {@code @Transactional} on the
 * bean joins the batch's transaction).
 *
 * <p>Thread-safe: beans are post-processed on the thread that refreshes the context, and the list is read after.
 */
public final class ListenerMethods implements BeanPostProcessor {

  /** One listener method of a bean. */
  record Listener(String topic, String group, String beanName, Object bean, Method method) {
    String describe() {
      return beanName + "." + method.getName();
    }
  }

  private final List<Listener> found = Collections.synchronizedList(new ArrayList<>());

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Class<?> type = AopUtils.getTargetClass(bean);
    Map<Method, HandoffListener> methods = MethodIntrospector.selectMethods(type,
        (MethodIntrospector.MetadataLookup<HandoffListener>) m ->
            AnnotatedElementUtils.findMergedAnnotation(m, HandoffListener.class));
    methods.forEach((method, annotation) -> {
      Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
      requireParameters(beanName, method);
      invocable.trySetAccessible();
      found.add(new Listener(annotation.topic(), annotation.group(), beanName, bean, invocable));
    });
    return bean;
  }

  List<Listener> listeners() {
    synchronized (found) {
      return List.copyOf(found);
    }
  }

  private static void requireParameters(String beanName, Method method) {
    boolean message = false;
    for (Class<?> p : method.getParameterTypes()) {
      if (p == InboundMessage.class && !message) {
        message = true;
      } else if (p != Connection.class) {
        throw new HandoffStartupException("@HandoffListener method " + beanName + "." + method.getName()
            + " has a parameter of type " + p.getName() + "; a listener takes an InboundMessage and, optionally, a"
            + " java.sql.Connection");
      }
    }
    if (!message) {
      throw new HandoffStartupException("@HandoffListener method " + beanName + "." + method.getName()
          + " has no InboundMessage parameter");
    }
  }

  /** The handler that calls {@code listener}'s method with the message (and the transaction's connection). */
  static MessageHandler handlerOf(Listener listener) {
    Class<?>[] types = listener.method().getParameterTypes();
    return (tx, message) -> {
      Object[] args = new Object[types.length];
      for (int i = 0; i < types.length; i++) {
        args[i] = types[i] == InboundMessage.class ? message : tx;
      }
      try {
        listener.method().invoke(listener.bean(), args);
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause();
        if (cause instanceof Exception ex) {
          throw ex;
        }
        throw (Error) cause;
      }
      SpringTransactions.flushCurrent();
    };
  }
}
